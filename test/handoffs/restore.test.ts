import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpointer } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { expectConsistentTranscript } from '../helpers.js';
import {
  dropSchema,
  pgAvailable,
  pgConfig,
  requirePostgres,
  testPool,
  uniqueSchema,
} from '../checkpoint/postgres-server.js';
import { bundledScript } from '../bundled-script.js';

requirePostgres();

const fixture = fileURLToPath(new URL('./fixtures/handoff-process.ts', import.meta.url));
/** `fixture` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let fixtureBundle: string;
beforeAll(async () => {
  fixtureBundle = await bundledScript(fixture);
});
const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cubepi-handoffs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Backend {
  readonly name: string;
  readonly arg: string;
  make(label: string): Promise<{ store: string; checkpointer: Checkpointer; dispose: () => Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'SQLite',
    arg: 'sqlite',
    make: async (label) => {
      const file = join(dir, `${label}.db`);
      const checkpointer = new SQLiteCheckpointer(file);
      return { store: file, checkpointer, dispose: () => checkpointer.close() };
    },
  },
];
if (pgAvailable) {
  backends.push({
    name: 'PostgreSQL',
    arg: 'postgres',
    make: async (label) => {
      const schema = uniqueSchema(`handoff_${label}`);
      const pool = testPool({ max: 2 });
      const checkpointer = new PostgresCheckpointer(pool, { schema });
      return {
        store: `${JSON.stringify(pgConfig)}|${schema}`,
        checkpointer,
        dispose: async () => {
          await dropSchema(pool, schema);
          await pool.end();
        },
      };
    },
  });
}

/** Runs the fixture to its end; resolves with its last stdout line, parsed. */
function runProcess(args: string[]): Promise<{ calls: string[]; starts?: string[]; error?: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fixtureBundle, ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`exit ${code}:\n${err}`)),
    );
  });
}

describe.each(backends)('$name: a handed-off thread in a new process', (backend) => {
  it('continues with the agent it was handed to; one that cannot reach it gets UnknownAgentError', async () => {
    const { store, checkpointer, dispose } = await backend.make('restore');
    try {
      const first = await runProcess([backend.arg, store, 'th', 'first']);
      expect(first).toEqual({
        calls: ['triage:You route customers.', 'billing:You handle invoices.'],
        starts: ['triage'],
      });
      const stored = (await checkpointer.load('th'))!;
      expect(stored.extra['handoff.active']).toEqual({ agent: 'billing', tool: 'transfer_to_billing', at: 3 });

      // A new process, a new checkpointer on the same store: the first model call is billing's.
      const second = await runProcess([backend.arg, store, 'th', 'second']);
      expect(second).toEqual({ calls: ['billing:You handle invoices.'], starts: ['billing'] });
      const after = (await checkpointer.load('th'))!;
      expect(after.messages.map((m) => m.role)).toEqual([
        'user',
        'assistant',
        'toolResult',
        'assistant',
        'user',
        'assistant',
      ]);
      expectConsistentTranscript(after.messages);

      // A process configured without the billing handoff: a typed error, no model called, nothing written.
      const unknown = await runProcess([backend.arg, store, 'th', 'unknown']);
      expect(unknown).toEqual({ error: 'UnknownAgentError', calls: [] });
      expect((await checkpointer.load('th'))!.messages).toHaveLength(after.messages.length);
    } finally {
      await dispose();
    }
  }, 90_000); // three child processes (tsx) under a loaded machine
});
