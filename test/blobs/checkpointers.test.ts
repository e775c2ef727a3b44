// Files stored by reference on the three checkpointers: the row holds the ref and no bytes, the bytes are stored
// once, deleteThread removes only blobs no other thread refers to (forks included), a failed blob write writes
// nothing, and a blob missing at restore fails the run with a typed error before anything is sent.
import { afterAll, describe, expect, it } from 'vitest';
import {
  Agent,
  BlobMissingError,
  CheckpointError,
  ThreadConflictError,
  ThreadHasForksError,
  type BlobRef,
  type BlobStore,
  type FileContent,
  type Message,
} from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { pgAvailable, requirePostgres, testPool } from '../checkpoint/postgres-server.js';
import { memoryBackend, postgresBackend, sqliteBackend, sqliteFilesBackend, type Backend } from './backends.js';
import { fakePdf, fileBlocks, pdfMessage } from './files.js';

requirePostgres();
const admin = pgAvailable ? testPool({ max: 2 }) : undefined;
afterAll(async () => {
  await admin?.end();
});

const backends: Backend[] = [
  memoryBackend,
  sqliteBackend,
  sqliteFilesBackend,
  ...(pgAvailable ? [postgresBackend(() => admin!)] : []),
];
const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });

describe.each(backends)('$name with its blob store', (backend) => {
  it('stores a PDF by reference: the row holds ref and size but no bytes, the bytes are stored once', async () => {
    const store = await backend.open();
    try {
      const pdf = fakePdf(200_000, 1);
      const small = { type: 'file', mimeType: 'text/plain', name: 'note.txt', data: btoa('a short note') } as const;
      await store.checkpointer.append('t', [pdfMessage(pdf, 'first'), pdfMessage(pdf, 'again'), user('plain')]);
      await store.checkpointer.append('t', [
        { role: 'user', content: [{ type: 'text', text: 'small' }, small], timestamp: 2 },
      ]);
      const loaded = await store.checkpointer.load('t');
      const files = fileBlocks(loaded!.messages);
      expect(files).toHaveLength(3);
      const ref = files[0]!.ref!;
      expect(ref).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(files[0]).toEqual({ type: 'file', mimeType: 'application/pdf', name: 'report.pdf', ref, size: 200_000 });
      expect(files[1]).toEqual(files[0]);
      // Under the threshold (4 KiB): inline, as written.
      expect(files[2]).toEqual(small);
      const bytes = await store.checkpointer.blobs!.get(ref);
      expect(Buffer.from(bytes!).equals(Buffer.from(pdf.bytes))).toBe(true);

      const rows = await store.rawBodies('t');
      if (rows !== undefined) {
        expect(rows).toHaveLength(4);
        for (const row of rows) expect(row).not.toContain(pdf.base64.slice(0, 64));
        expect(rows[0]).toContain(ref);
        expect(rows[0]!.length).toBeLessThan(400);
        expect(await store.blobRows()).toBeOneOf([1, undefined]);
      }
    } finally {
      await store.dispose();
    }
  });

  it("deleteThread deletes only the blobs no other thread refers to; a fork keeps its parent's", async () => {
    const store = await backend.open();
    try {
      const { checkpointer } = store;
      const [one, two, three] = [fakePdf(50_000, 11), fakePdf(50_000, 12), fakePdf(50_000, 13)];
      await checkpointer.append('a', [pdfMessage(one, 'one'), pdfMessage(two, 'two')]);
      await checkpointer.append('b', [pdfMessage(one, 'one in b')]);
      await checkpointer.fork!('a', { atSeq: 1, newThreadId: 'fork' });
      await checkpointer.append('fork', [pdfMessage(three, 'three in the fork')], { expectedSeq: 1 });
      const refs = [one, two, three].map((pdf) => pdf.ref);
      const present = async () =>
        Promise.all(refs.map(async (ref) => (await checkpointer.blobs!.get(ref)) !== undefined));
      expect(await present()).toEqual([true, true, true]);

      await checkpointer.deleteThread('b');
      expect(await present()).toEqual([true, true, true]); // one: a and the fork still refer to it
      await expect(checkpointer.deleteThread('a')).rejects.toBeInstanceOf(ThreadHasForksError);
      expect(await present()).toEqual([true, true, true]);
      await checkpointer.deleteThread('fork');
      expect(await present()).toEqual([true, true, false]); // three was the fork's own
      // The fork is gone; its parent still loads its files.
      expect(fileBlocks((await checkpointer.load('a'))!.messages).map((f) => f.ref)).toEqual([one.ref, two.ref]);
      await checkpointer.deleteThread('a');
      expect(await present()).toEqual([false, false, false]);
      expect(await store.blobRows()).toBeOneOf([0, undefined]);
    } finally {
      await store.dispose();
    }
  });

  it('a chain of forks: the blob stays until the last thread referring to it is deleted', async () => {
    const store = await backend.open();
    try {
      const { checkpointer } = store;
      const pdf = fakePdf(30_000, 21);
      await checkpointer.append('root', [pdfMessage(pdf, 'p'), user('x')]);
      await checkpointer.fork!('root', { atSeq: 2, newThreadId: 'mid' });
      await checkpointer.fork!('mid', { atSeq: 1, newThreadId: 'leaf' });
      await checkpointer.deleteThread('leaf');
      expect(await checkpointer.blobs!.get(pdf.ref)).toBeDefined();
      await checkpointer.deleteThread('mid');
      expect(await checkpointer.blobs!.get(pdf.ref)).toBeDefined();
      await checkpointer.deleteThread('root');
      expect(await checkpointer.blobs!.get(pdf.ref)).toBeUndefined();
    } finally {
      await store.dispose();
    }
  });

  it('a blob store whose put fails fails the append with a CheckpointError, and nothing is stored', async () => {
    const failing: BlobStore = {
      put: () => Promise.reject(new Error('disk full')),
      get: () => Promise.resolve(undefined),
      delete: () => Promise.resolve(),
    };
    const store = await backend.open({ blobs: failing });
    try {
      await store.checkpointer.append('t', [user('before')]);
      const error = await store.checkpointer
        .append('t', [user('with a file'), pdfMessage(fakePdf(10_000, 3), 'x')], { expectedSeq: 1 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CheckpointError);
      expect((error as CheckpointError).operation).toBe('append');
      expect((error as Error).message).toContain('disk full');
      const loaded = await store.checkpointer.load('t');
      expect(loaded!.seq).toBe(1);
      expect((await store.rawBodies('t'))?.length ?? 1).toBe(1);
    } finally {
      await store.dispose();
    }
  });

  it('an append with a file that loses its expectedSeq race writes nothing: no row, no blob', async () => {
    const store = await backend.open();
    try {
      const pdf = fakePdf(12_000, 8);
      await store.checkpointer.append('t', [user('one'), user('two')]);
      await expect(store.checkpointer.append('t', [pdfMessage(pdf, 'late')], { expectedSeq: 1 })).rejects.toThrow(
        ThreadConflictError,
      );
      expect((await store.checkpointer.load('t'))!.seq).toBe(2);
      expect(await store.checkpointer.blobs!.get(pdf.ref)).toBeUndefined();
    } finally {
      await store.dispose();
    }
  });

  it('appends of a file racing the deletion of the only other thread holding it never leave a dangling ref', async () => {
    const store = await backend.open();
    try {
      const { checkpointer } = store;
      for (let round = 0; round < 8; round++) {
        const pdf = fakePdf(20_000, 100 + round);
        await checkpointer.append(`old-${round}`, [pdfMessage(pdf, 'old')]);
        await Promise.all([
          checkpointer.deleteThread(`old-${round}`),
          checkpointer.append(`new-${round}`, [pdfMessage(pdf, 'new')]),
        ]);
        const [file] = fileBlocks((await checkpointer.load(`new-${round}`))!.messages);
        expect(file!.ref).toBe(pdf.ref);
        expect(await checkpointer.blobs!.get(pdf.ref), `round ${round}`).toBeDefined();
      }
    } finally {
      await store.dispose();
    }
  });

  it('blobs: false keeps every file inline in its row', async () => {
    const store = await backend.open({ blobs: false });
    try {
      const pdf = fakePdf(20_000, 4);
      await store.checkpointer.append('t', [pdfMessage(pdf, 'inline')]);
      expect(store.checkpointer.blobs).toBeUndefined();
      expect(fileBlocks((await store.checkpointer.load('t'))!.messages)[0]!.data).toBe(pdf.base64);
    } finally {
      await store.dispose();
    }
  });

  it('a blob missing at restore fails the run with BlobMissingError naming the block, and nothing is sent', async () => {
    const store = await backend.open();
    try {
      const pdf = fakePdf(40_000, 5);
      const first = new FauxProvider({ responses: [fauxMessage('read it')] });
      const agent = new Agent({ provider: first, model: 'faux', checkpointer: store.checkpointer, threadId: 't' });
      await agent.prompt(pdfMessage(pdf, 'Summarise this'));
      await store.checkpointer.blobs!.delete(pdf.ref);

      const next = new FauxProvider({ responses: [fauxMessage('never')] });
      const restored = new Agent({ provider: next, model: 'faux', checkpointer: store.checkpointer, threadId: 't' });
      const error = await restored.prompt('and then?').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BlobMissingError);
      expect(error).toMatchObject({ code: 'blob_missing', ref: pdf.ref, messageIndex: 0, blockIndex: 1 });
      expect(next.callCount).toBe(0);
    } finally {
      await store.dispose();
    }
  });
});

describe('the SQLite blob table shares the rows transaction', () => {
  it('a failing blob insert rolls the append back: no row, no reference, no blob', async () => {
    const store = await sqliteBackend.open();
    try {
      await store.exec(
        `CREATE TRIGGER no_blobs BEFORE INSERT ON cubepi_blobs BEGIN SELECT RAISE(ABORT, 'disk full'); END`,
      );
      const error = await store.checkpointer
        .append('t', [pdfMessage(fakePdf(10_000, 6), 'x')])
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CheckpointError);
      expect(await store.checkpointer.load('t')).toBeNull();
      expect(await store.rawBodies('t')).toEqual([]);
      expect(await store.blobRows()).toBe(0);
    } finally {
      await store.dispose();
    }
  });
});

describe.skipIf(!pgAvailable)('the PostgreSQL blob table shares the rows transaction', () => {
  it('a failing blob insert rolls the append back: no row, no reference, no blob', async () => {
    const store = await postgresBackend(() => admin!).open();
    try {
      await store.checkpointer.append('t', [user('before')]);
      await store.exec(`ALTER TABLE cubepi_blobs ADD CONSTRAINT tiny CHECK (size < 1000)`);
      const error = await store.checkpointer
        .append('t', [user('with a file'), pdfMessage(fakePdf(10_000, 7), 'x')], { expectedSeq: 1 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CheckpointError);
      expect((await store.checkpointer.load('t'))!.seq).toBe(1);
      expect(await store.rawBodies('t')).toHaveLength(1);
      expect(await store.blobRows()).toBe(0);
    } finally {
      await store.dispose();
    }
  });
});

// Keep the types honest: a loaded file block is a FileContent with a BlobRef.
export type _Check = FileContent['ref'] extends BlobRef | undefined ? true : never;
