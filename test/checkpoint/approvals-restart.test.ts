// A run paused for approval survives its process: pause → exit → a new process restores, answers and completes; and a
// process killed (SIGKILL) after storing an answer, while the approved tool runs, never runs that tool twice (issue 17).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Checkpointer, type ToolResultMessage } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { expectConsistentTranscript } from '../helpers.js';
import { dropSchema, pgAvailable, pgConfig, requirePostgres, testPool, uniqueSchema } from './postgres-server.js';
import { bundledScript } from '../bundled-script.js';

requirePostgres();

const fixture = fileURLToPath(new URL('./fixtures/approval-agent.ts', import.meta.url));
/** `fixture` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let fixtureBundle: string;
beforeAll(async () => {
  fixtureBundle = await bundledScript(fixture);
});
const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cubepi-approvals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Backend {
  readonly name: string;
  /** The store argument of the fixture and a checkpointer on it for this process. */
  make(label: string): Promise<{ store: string; checkpointer: Checkpointer; dispose: () => Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'SQLite',
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
    make: async (label) => {
      const schema = uniqueSchema(`appr_${label}`);
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

/** Runs the fixture to its end; resolves with its stdout. */
function runProcess(args: string[], log: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fixtureBundle, ...args], {
      cwd: root,
      env: { ...process.env, RUN_LOG: log },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}:\n${err}`))));
  });
}

/** Runs the fixture until it prints `marker`, then kills it with SIGKILL. */
function runUntil(args: string[], log: string, marker: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fixtureBundle, ...args], {
      cwd: root,
      env: { ...process.env, RUN_LOG: log },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    let killed = false;
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      if (!killed && chunk.toString().includes(marker)) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    child.on('exit', (_code, signal) =>
      signal === 'SIGKILL' ? resolve() : reject(new Error(`the fixture ended before ${marker}:\n${err}`)),
    );
  });
}

const runs = (log: string) => readFileSync(log, 'utf8').trim().split('\n').filter(Boolean);
const results = (messages: readonly { role: string }[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');

describe.each(backends)('$name: approvals across processes', (backend) => {
  it('pause → the process exits → a new process restores, answers, and the run completes', async () => {
    const { store, checkpointer, dispose } = await backend.make('restart');
    const log = join(dir, `${backend.name}-restart.log`);
    try {
      const first = await runProcess([backend.name === 'SQLite' ? 'sqlite' : 'postgres', store, 'th', 'suspend'], log);
      expect(first).toContain('OUTCOME suspended PENDING ["send_email","fetch_page"]');
      const stored = (await checkpointer.load('th'))!;
      expect((stored.extra['cubepi:approvals'] as { requests: unknown[] }).requests).toHaveLength(2);

      const second = await runProcess(
        [backend.name === 'SQLite' ? 'sqlite' : 'postgres', store, 'th', 'respond', JSON.stringify({ approve: true })],
        log,
      );
      expect(second).toContain('PENDING ["send_email","fetch_page"]');
      expect(second).toContain('OUTCOME completed PENDING []');
      expect(runs(log)).toEqual(['send_email:ann', 'fetch_page:example.org']);
      const done = (await checkpointer.load('th'))!;
      expectConsistentTranscript(done.messages);
      expect(results(done.messages).map((r) => [r.toolCallId, r.outcome])).toEqual([
        ['call_mail', 'ok'],
        ['call_fetch', 'ok'],
      ]);
      expect(done.messages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
      expect(done.extra['cubepi:approvals']).toBeUndefined();
    } finally {
      await dispose();
    }
  });

  it('killed after the answers were stored, mid-tool: the non-idempotent call is interrupted, the idempotent one runs', async () => {
    const { store, checkpointer, dispose } = await backend.make('killed');
    const log = join(dir, `${backend.name}-killed.log`);
    const kind = backend.name === 'SQLite' ? 'sqlite' : 'postgres';
    try {
      await runProcess([kind, store, 'tk', 'suspend'], log);
      await runUntil([kind, store, 'tk', 'respond-hang'], log, 'started send_email');
      // The answers were stored before anything ran, and the email tool started.
      const after = (await checkpointer.load('tk'))!;
      const record = after.extra['cubepi:approvals'] as { requests: { answer?: unknown }[] };
      expect(record.requests.map((r) => r.answer)).toEqual([{ approve: true }, { approve: true }]);
      expect(runs(log)).toEqual(['send_email:ann']);

      const third = await runProcess([kind, store, 'tk', 'resume'], log);
      expect(third).toContain('OUTCOME completed');
      // The email is never sent twice; the idempotent fetch runs (for the first time).
      expect(runs(log)).toEqual(['send_email:ann', 'fetch_page:example.org']);
      const done = (await checkpointer.load('tk'))!;
      expectConsistentTranscript(done.messages);
      expect(results(done.messages).map((r) => [r.toolCallId, r.outcome])).toEqual([
        ['call_mail', 'interrupted'],
        ['call_fetch', 'ok'],
      ]);
    } finally {
      await dispose();
    }
  });
});
