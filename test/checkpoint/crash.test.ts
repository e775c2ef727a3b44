// A process killed (SIGKILL) while it appends leaves a consistent prefix: whole batches, no hole, nothing half
// written; a new process loads it and continues with expectedSeq.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpointer, Message } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { dropSchema, pgAvailable, pgConfig, requirePostgres, testPool, uniqueSchema } from './postgres-server.js';
import { bundledScript } from '../bundled-script.js';

const writer = fileURLToPath(new URL('./fixtures/append-until-killed.ts', import.meta.url));
/** `writer` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let writerBundle: string;
beforeAll(async () => {
  writerBundle = await bundledScript(writer);
});
const root = fileURLToPath(new URL('../..', import.meta.url));
const acknowledging = fileURLToPath(new URL('./fixtures/append-acknowledged.ts', import.meta.url));

/** Runs the writer until it has committed at least `batches` batches, kills it, and returns the last seq it printed. */
async function appendUntilKilled(args: string[], batches: number): Promise<number> {
  const child = spawn(process.execPath, [writerBundle, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let printed = 0;
  let stderr = '';
  let buffer = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) printed = Number(line);
      if (printed >= batches * 3 && !child.killed) {
        child.kill('SIGKILL');
        resolve();
      }
    });
    void exited.then(() => reject(new Error(`the writer exited before it was killed:\n${stderr}`)));
  });
  expect(await exited).toBe('SIGKILL');
  return printed; // everything the writer printed before it died has been read by now
}

/** The thread is whole batches m0, m1, … with no hole, at or one batch past what the writer reported. */
async function expectConsistentPrefix(checkpointer: Checkpointer, threadId: string, printed: number) {
  const saved = await checkpointer.load(threadId);
  expect(saved).not.toBeNull();
  const { messages, seq } = saved!;
  expect(seq % 3).toBe(0);
  expect([printed, printed + 3]).toContain(seq);
  expect(messages.map((m: Message) => (m.content as string).split(' ')[0])).toEqual(
    Array.from({ length: seq }, (_, i) => `m${i}`),
  );
  const next = await checkpointer.append(threadId, [{ role: 'user', content: 'resumed', timestamp: 1 }], {
    expectedSeq: seq,
  });
  expect(next.seq).toBe(seq + 1);
}

describe('a writer killed mid-append (SIGKILL)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-crash-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('leaves a SQLite file with whole batches and no hole, which a new process continues', async () => {
    const file = join(dir, 'threads.db');
    const printed = await appendUntilKilled(['sqlite', file, 'crash'], 30);
    const checkpointer = new SQLiteCheckpointer(file);
    try {
      await expectConsistentPrefix(checkpointer, 'crash', printed);
    } finally {
      await checkpointer.close();
    }
  });

  requirePostgres();
  it.skipIf(!pgAvailable)(
    'leaves PostgreSQL with whole batches and no hole, which a new process continues',
    async () => {
      const schema = uniqueSchema('crash');
      const pool = testPool();
      try {
        const printed = await appendUntilKilled(['postgres', JSON.stringify(pgConfig), schema, 'crash'], 30);
        await expectConsistentPrefix(new PostgresCheckpointer(pool, { schema }), 'crash', printed);
      } finally {
        await dropSchema(pool, schema);
        await pool.end();
      }
    },
  );
});

describe('a process killed (SIGKILL) after acknowledged appends (group commit)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-crash-ack-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const synchronous of ['full', 'normal'] as const) {
    it(`keeps every append whose promise resolved, 20 threads writing at once (synchronous ${synchronous})`, async () => {
      const file = join(dir, `ack-${synchronous}.db`);
      const child = spawn(process.execPath, [await bundledScript(acknowledging), file, synchronous], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const acknowledged = new Map<string, number>();
      let lines = 0;
      let buffer = '';
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.on('exit', (_code, signal) => resolve(signal)),
      );
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          buffer += chunk.toString();
          const complete = buffer.split('\n');
          buffer = complete.pop()!;
          for (const line of complete) {
            const [threadId, seq] = line.split(' ') as [string, string];
            acknowledged.set(threadId, Math.max(acknowledged.get(threadId) ?? 0, Number(seq)));
            lines++;
          }
          if (lines >= 600 && !child.killed) {
            child.kill('SIGKILL');
            resolve();
          }
        });
        void exited.then(() => reject(new Error(`the writer exited before it was killed:\n${stderr}`)));
      });
      expect(await exited).toBe('SIGKILL');
      expect(acknowledged.size).toBe(20);
      const checkpointer = new SQLiteCheckpointer(file);
      try {
        for (const [threadId, seq] of acknowledged) {
          const saved = await checkpointer.load(threadId);
          // Everything acknowledged is there, and what is there is whole batches with no hole.
          expect(saved!.seq).toBeGreaterThanOrEqual(seq);
          expect(saved!.seq % 2).toBe(0);
          expect(saved!.messages.map((m: Message) => (m.content as string).split(' ')[0])).toEqual(
            Array.from({ length: saved!.seq }, (_, i) => `m${i}`),
          );
        }
      } finally {
        await checkpointer.close();
      }
    });
  }
});
