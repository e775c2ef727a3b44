// A thread holding a PDF stored by reference, restored in a new process (SQLite, PostgreSQL) or by a new Agent
// (memory): the provider receives the very same `data` string before and after the restore (prompt caches stay warm),
// and never a `ref`.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, type Message } from 'cubepi';
import { z } from 'zod';
import { defineTool } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { pgAvailable, requirePostgres, testPool } from '../checkpoint/postgres-server.js';
import { memoryBackend, postgresBackend, sqliteBackend, type Backend } from './backends.js';
import { fakePdf, fileBlocks, pdfMessage } from './files.js';
import { bundledScript } from '../bundled-script.js';

requirePostgres();
const admin = pgAvailable ? testPool({ max: 2 }) : undefined;
afterAll(async () => {
  await admin?.end();
});

const fixture = fileURLToPath(new URL('./fixtures/next-turn.ts', import.meta.url));
/** `fixture` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let fixtureBundle: string;
beforeAll(async () => {
  fixtureBundle = await bundledScript(fixture);
});
const root = fileURLToPath(new URL('../..', import.meta.url));

interface Seen {
  readonly seen: { sha256: string; length: number }[];
  readonly refs: number;
}

/** What the provider received: each file block's data (hashed) and how many blocks still held a ref. */
function recorder(into: Seen[]) {
  return (messages: readonly Message[]) => {
    const files = fileBlocks(messages);
    into.push({
      seen: files
        .filter((f) => f.data !== undefined)
        .map((f) => ({ sha256: createHash('sha256').update(f.data!).digest('hex'), length: f.data!.length })),
      refs: files.filter((f) => f.ref !== undefined).length,
    });
    return fauxMessage('read it');
  };
}

function nextTurnInNewProcess(location: readonly [string, string], threadId: string): Promise<Seen> {
  const child = spawn(process.execPath, [fixtureBundle, ...location, threadId], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(stdout) as Seen) : reject(new Error(`exit ${code}:\n${stderr}`)),
    ),
  );
}

const durable: Backend[] = [sqliteBackend, ...(pgAvailable ? [postgresBackend(() => admin!)] : [])];

describe.each(durable)('$name: a PDF thread restored in a new process', (backend) => {
  it('sends the same data string after the restore as before it, and the stored row holds no bytes', async () => {
    const store = await backend.open();
    try {
      const pdf = fakePdf(300_000, 42);
      const before: Seen[] = [];
      const agent = new Agent({
        provider: new FauxProvider({ responses: [recorder(before)] }),
        model: 'faux',
        checkpointer: store.checkpointer,
        threadId: 'report',
      });
      await agent.prompt(pdfMessage(pdf, 'Summarise the report'));
      const sent = { sha256: createHash('sha256').update(pdf.base64).digest('hex'), length: pdf.base64.length };
      expect(before).toEqual([{ seen: [sent], refs: 0 }]);
      const rows = await store.rawBodies('report');
      expect(rows![0]).toContain(pdf.ref);
      expect(rows![0]).not.toContain(pdf.base64.slice(0, 64));

      const after = await nextTurnInNewProcess(store.location!, 'report');
      expect(after).toEqual({ seen: [sent], refs: 0 });
    } finally {
      await store.dispose();
    }
  }, 60_000);
});

describe('MemoryCheckpointer: a PDF thread restored by a new Agent', () => {
  it("sends the same data string on every turn, before and after the restore, fetching the blob once for the run's two turns", async () => {
    const store = await memoryBackend.open();
    try {
      const pdf = fakePdf(100_000, 43);
      const seen: Seen[] = [];
      const first = new Agent({
        provider: new FauxProvider({ responses: [recorder(seen)] }),
        model: 'faux',
        checkpointer: store.checkpointer,
        threadId: 't',
      });
      await first.prompt(pdfMessage(pdf, 'Summarise'));
      const blobs = store.checkpointer.blobs!;
      let gets = 0;
      const get = blobs.get.bind(blobs);
      blobs.get = (ref) => (gets++, get(ref));
      // Two turns in the restored run: a tool call, then the answer.
      const page = defineTool({
        name: 'page',
        description: 'A page of the report',
        parameters: z.object({ n: z.number() }),
        execute: async () => ({ content: [{ type: 'text', text: 'page 2' }] }),
      });
      const callTool = (messages: readonly Message[]) => {
        recorder(seen)(messages);
        return fauxMessage([fauxToolCall('page', { n: 2 })]);
      };
      const restored = new Agent({
        provider: new FauxProvider({ responses: [callTool, recorder(seen)] }),
        model: 'faux',
        tools: [page],
        checkpointer: store.checkpointer,
        threadId: 't',
      });
      await restored.prompt('next');
      expect(restored.state.messages[0]!.content).toContainEqual(expect.objectContaining({ ref: pdf.ref }));
      const sent = { sha256: createHash('sha256').update(pdf.base64).digest('hex'), length: pdf.base64.length };
      expect(seen).toEqual([
        { seen: [sent], refs: 0 },
        { seen: [sent], refs: 0 },
        { seen: [sent], refs: 0 },
      ]);
      expect(gets).toBe(1);
    } finally {
      await store.dispose();
    }
  });
});
