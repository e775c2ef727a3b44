// The checkpoint sink on real stores: what a subscriber sees is already stored, and store failures end the stream
// with typed errors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { from, type Observable } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CheckpointError,
  EMPTY_USAGE,
  MemoryCheckpointer,
  ThreadConflictError,
  type AgentEvent,
  type Checkpointer,
  type Message,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { appendToCheckpoint } from 'cubepi/operators';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function sqlite(): SQLiteCheckpointer {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-sink-'));
  dirs.push(dir);
  return new SQLiteCheckpointer(join(dir, 'threads.db'));
}

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });
const end = (message: Message): AgentEvent => ({ type: 'message_end', runId: 'r', message });
const turnEnd = (turnIndex: number): AgentEvent => ({
  type: 'turn_end',
  runId: 'r',
  turnIndex,
  message: {
    role: 'assistant',
    content: [],
    stopReason: 'stop',
    usage: EMPTY_USAGE,
    provider: 'p',
    model: 'm',
    timestamp: 1,
  },
  toolResults: [],
});

/** A run's events: two turns, each with messages and a turn_end, plus events that are not written. */
function run$(): Observable<AgentEvent> {
  return from<AgentEvent[]>([
    { type: 'agent_start', runId: 'r' },
    { type: 'turn_start', runId: 'r', turnIndex: 0 },
    end(user('one')),
    end(user('two')),
    turnEnd(0),
    { type: 'turn_start', runId: 'r', turnIndex: 1 },
    end(user('three')),
    turnEnd(1),
    { type: 'agent_end', runId: 'r', messages: [], outcome: 'completed', usage: EMPTY_USAGE },
  ]);
}

describe('appendToCheckpoint on a SQLite file', () => {
  it('stores every message before its message_end reaches a subscriber, and extra before turn_end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cubepi-sink-'));
    dirs.push(dir);
    const file = join(dir, 'threads.db');
    const checkpointer = new SQLiteCheckpointer(file);
    await checkpointer.append('t', [user('zero')]);
    // A second connection reads the file synchronously, at the very moment each event is delivered.
    const reader = new Database(file, { readonly: true });
    const stored = () => {
      const thread = reader.prepare('SELECT next_seq, extra FROM cubepi_threads').get() as {
        next_seq: number;
        extra: string;
      };
      const last = reader
        .prepare('SELECT body FROM cubepi_messages WHERE seq = ?')
        .pluck()
        .get(thread.next_seq - 1);
      return `stored ${thread.next_seq}, last ${(JSON.parse(last as string) as Message).content as string}, extra ${thread.extra}`;
    };
    // better-sqlite3 writes synchronously; a real store takes time: each write here lands a macrotask later.
    const later = () => new Promise((resolve) => setImmediate(resolve));
    const slowStore = {
      append: async (...args: Parameters<Checkpointer['append']>) => (await later(), checkpointer.append(...args)),
      saveExtra: async (...args: Parameters<Checkpointer['saveExtra']>) => (
        await later(),
        checkpointer.saveExtra(...args)
      ),
    };
    let turns = 0;
    const sink = appendToCheckpoint(slowStore, 't', { seq: 1, extra: () => ({ turns: ++turns }) });
    const seen: string[] = [];
    await new Promise<void>((resolve, reject) =>
      run$()
        .pipe(sink)
        .subscribe({
          next: (event) => {
            if (event.type === 'message_end' || event.type === 'turn_end') seen.push(`${event.type}: ${stored()}`);
          },
          error: reject,
          complete: resolve,
        }),
    );
    reader.close();
    await checkpointer.close();
    expect(seen).toEqual([
      'message_end: stored 2, last one, extra {}',
      'message_end: stored 3, last two, extra {}',
      'turn_end: stored 3, last two, extra {"turns":1}',
      'message_end: stored 4, last three, extra {"turns":1}',
      'turn_end: stored 4, last three, extra {"turns":2}',
    ]);
  });
});

for (const [name, make] of [
  ['MemoryCheckpointer', () => new MemoryCheckpointer()],
  ['SQLiteCheckpointer', sqlite],
] as const) {
  describe(`appendToCheckpoint on a ${name}`, () => {
    it('ends the stream with ThreadConflictError when another writer got there first, emitting no message after', async () => {
      const checkpointer: Checkpointer = make();
      await checkpointer.append('t', [user('zero')]);
      await checkpointer.append('t', [user('someone else')], { expectedSeq: 1 });
      const delivered: string[] = [];
      const error = await new Promise<unknown>((resolve) => {
        run$()
          .pipe(appendToCheckpoint(checkpointer, 't', { seq: 1 }))
          .subscribe({
            next: (event) => delivered.push(event.type),
            error: resolve,
            complete: () => resolve(undefined),
          });
      });
      expect(error).toBeInstanceOf(ThreadConflictError);
      expect(error).toMatchObject({ threadId: 't', expected: 1, actual: 2 });
      expect(delivered).toEqual(['agent_start', 'turn_start']);
      expect((await checkpointer.load('t'))?.seq).toBe(2);
      await checkpointer.close?.();
    });
  });
}

describe('appendToCheckpoint on a failing store', () => {
  it('ends the stream with a CheckpointError naming the thread; the message_end it could not store is not emitted', async () => {
    const checkpointer = sqlite();
    await checkpointer.close(); // every write now fails
    const delivered: string[] = [];
    const error = await new Promise<unknown>((resolve) => {
      run$()
        .pipe(appendToCheckpoint(checkpointer, 't', { seq: 0 }))
        .subscribe({ next: (event) => delivered.push(event.type), error: resolve, complete: () => resolve(undefined) });
    });
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ threadId: 't', operation: 'append' });
    expect(delivered).toEqual(['agent_start', 'turn_start']);
  });
});
