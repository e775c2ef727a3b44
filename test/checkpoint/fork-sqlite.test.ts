// Forks on SQLite beyond the conformance kit: a store written by schema version 1 migrates and forks, a fork writes
// one row whatever the history, and a fork's load is one query over the primary key at any depth.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';

const dirs: string[] = [];
function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-fork-'));
  dirs.push(dir);
  return join(dir, 'threads.db');
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });
const texts = (messages: readonly Message[] | undefined) => messages?.map((m) => m.content);

// Schema version 1 exactly as cubepi 0.x before forks created it (the released migration 1).
const V1 = `
  CREATE TABLE cubepi_schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
  INSERT INTO cubepi_schema_version (id, version) VALUES (1, 1);
  CREATE TABLE "cubepi_threads" (
    id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL UNIQUE, next_seq INTEGER NOT NULL,
    extra TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
  );
  CREATE TABLE "cubepi_messages" (
    thread_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (thread_id, seq)
  );`;

function counts(path: string): { threads: number; messages: number } {
  const db = new Database(path, { readonly: true });
  try {
    return {
      threads: db.prepare('SELECT count(*) FROM cubepi_threads').pluck().get() as number,
      messages: db.prepare('SELECT count(*) FROM cubepi_messages').pluck().get() as number,
    };
  } finally {
    db.close();
  }
}

describe('SQLiteCheckpointer forks', () => {
  it('migrates a store written by schema version 1: its threads load unchanged, then fork and append', async () => {
    const path = tempFile();
    const old = new Database(path);
    old.exec(V1);
    const insertThread = old.prepare(
      'INSERT INTO cubepi_threads (thread_id, next_seq, extra, created_at, updated_at) VALUES (?, ?, ?, 10, 20)',
    );
    const insertMessage = old.prepare('INSERT INTO cubepi_messages (thread_id, seq, body) VALUES (?, ?, ?)');
    insertThread.run('old', 3, '{"k":1}');
    for (let seq = 0; seq < 3; seq++) insertMessage.run('old', seq, JSON.stringify(user(`m${seq}`)));
    old.close();

    const checkpointer = new SQLiteCheckpointer(path);
    try {
      expect(await checkpointer.load('old')).toEqual({
        messages: ['m0', 'm1', 'm2'].map(user),
        extra: { k: 1 },
        seq: 3,
      });
      const [info] = await checkpointer.listThreads();
      expect(info).toMatchObject({ threadId: 'old', messageCount: 3, createdAt: 10, updatedAt: 20 });
      expect(info?.parent).toBeUndefined();
      // Migration 3 (owners): a thread from before owners is unowned, and a claim does not adopt it.
      expect(info?.owner).toBeUndefined();
      expect(await checkpointer.threadOwner('old')).toBeNull();
      expect(await checkpointer.claimThread('old', 'mallory')).toBeNull();
      await checkpointer.fork('old', { atSeq: 2, newThreadId: 'new' });
      await checkpointer.append('new', [user('n')], { expectedSeq: 2 });
      await checkpointer.append('old', [user('m3')], { expectedSeq: 3 });
      expect(texts((await checkpointer.load('new'))?.messages)).toEqual(['m0', 'm1', 'n']);
      expect(texts((await checkpointer.load('old'))?.messages)).toEqual(['m0', 'm1', 'm2', 'm3']);
    } finally {
      await checkpointer.close();
    }
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT version FROM cubepi_schema_version').pluck().get()).toBe(4);
    db.close();
  });

  it('writes one thread row and no message row per fork, whatever the history (1,000 messages, 5 deep)', async () => {
    const path = tempFile();
    const checkpointer = new SQLiteCheckpointer(path);
    try {
      await checkpointer.append(
        't0',
        Array.from({ length: 1000 }, (_, i) => user(`m${i}`)),
      );
      for (let d = 1; d <= 5; d++) {
        const before = counts(path);
        await checkpointer.fork(`t${d - 1}`, { atSeq: 1000 - d, newThreadId: `t${d}` });
        expect(counts(path)).toEqual({ threads: before.threads + 1, messages: before.messages });
      }
      expect((await checkpointer.load('t5'))?.seq).toBe(995);
    } finally {
      await checkpointer.close();
    }
  });

  it('loads a fork 30 deep in as many statements as a thread that is not a fork, by the primary key', async () => {
    const path = tempFile();
    const statements: string[] = [];
    const db = new Database(path, { verbose: (sql) => statements.push(String(sql)) });
    const checkpointer = new SQLiteCheckpointer(db);
    try {
      await checkpointer.append('t0', [user('a'), user('b')]);
      for (let d = 1; d <= 30; d++) {
        await checkpointer.fork(`t${d - 1}`, { atSeq: d + 1, newThreadId: `t${d}` });
        await checkpointer.append(`t${d}`, [user(`own${d}`)]);
      }
      const statementsOf = async (threadId: string) => {
        statements.length = 0;
        const loaded = await checkpointer.load(threadId);
        return { loaded, statements: statements.filter((sql) => !/^(BEGIN|COMMIT)/.test(sql)) };
      };
      const plain = await statementsOf('t0');
      const deep = await statementsOf('t30');
      expect(texts(deep.loaded?.messages)).toEqual(['a', 'b', ...Array.from({ length: 30 }, (_, i) => `own${i + 1}`)]);
      expect(deep.statements.length).toBe(plain.statements.length);
      expect(deep.statements.length).toBe(2); // the thread's row, then every message in one query
      // That query reads each ancestor's rows by a primary-key search, never a scan of the messages table.
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${deep.statements[1]}`).all() as { detail: string }[]).map(
        (row) => row.detail,
      );
      expect(plan.some((detail) => /SEARCH m USING .*(PRIMARY KEY|autoindex_cubepi_messages)/.test(detail))).toBe(true);
      expect(plan.some((detail) => /SCAN m\b/.test(detail))).toBe(false);
    } finally {
      await checkpointer.close();
      db.close();
    }
  });
});
