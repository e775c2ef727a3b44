// The edges of files stored by reference: the filesystem store's layout and failed writes, what stays inline, tool
// results, and a ref with no store to read it from.
import { mkdtempSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BlobMissingError,
  CheckpointError,
  ConfigurationError,
  MemoryCheckpointer,
  runAgentLoop,
  type Message,
} from 'cubepi';
import { FileSystemBlobStore } from 'cubepi/blobs/filesystem';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { fakePdf, fileBlocks, pdfMessage } from './files.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-blob-edges-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('FileSystemBlobStore', () => {
  it('keeps each blob in two levels of fan-out directories named by its hash, and nothing else', async () => {
    const dir = tempDir();
    const store = new FileSystemBlobStore(dir);
    const pdf = fakePdf(5_000, 1);
    const ref = await store.put(pdf.bytes);
    const hex = ref.slice('sha256:'.length);
    expect(store.pathOf(ref)).toBe(join(dir, hex.slice(0, 2), hex.slice(2, 4), hex));
    expect(readdirSync(join(dir, hex.slice(0, 2), hex.slice(2, 4)))).toEqual([hex]); // no temp file left
  });

  it('a put that cannot write rejects with a CheckpointError and leaves no blob', async () => {
    const dir = tempDir();
    const store = new FileSystemBlobStore(dir);
    const pdf = fakePdf(5_000, 2);
    const hex = pdf.ref.slice('sha256:'.length);
    // A file where the fan-out directory must go: mkdir fails.
    writeFileSync(join(dir, hex.slice(0, 2)), 'in the way');
    const error = await store.put(pdf.bytes).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(existsSync(store.pathOf(pdf.ref))).toBe(false);
    expect(await store.get(pdf.ref).catch((e: unknown) => e)).toBeInstanceOf(CheckpointError);
  });

  it('refuses an empty directory at construction', () => {
    expect(() => new FileSystemBlobStore('')).toThrow(ConfigurationError);
  });
});

describe('what a checkpointer stores by reference', () => {
  it('a file in a tool result is stored by reference too; non-canonical base64 stays inline as written', async () => {
    const checkpointer = new MemoryCheckpointer();
    const pdf = fakePdf(10_000, 3);
    const spaced = `${pdf.base64.slice(0, 76)}\n${pdf.base64.slice(76)}`;
    const result: Message = {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'fetch',
      content: [{ type: 'file', mimeType: 'application/pdf', data: pdf.base64 }],
      isError: false,
      timestamp: 1,
    };
    const odd: Message = {
      role: 'user',
      content: [{ type: 'file', mimeType: 'application/pdf', data: spaced }],
      timestamp: 1,
    };
    await checkpointer.append('t', [result, odd]);
    const [fromTool, inline] = fileBlocks((await checkpointer.load('t'))!.messages);
    expect(fromTool).toEqual({ type: 'file', mimeType: 'application/pdf', ref: pdf.ref, size: 10_000 });
    expect(inline!.data).toBe(spaced);
  });

  it('blobThreshold decides what goes by reference, and is checked at construction', async () => {
    const checkpointer = new MemoryCheckpointer({ blobThreshold: 20_000 });
    await checkpointer.append('t', [pdfMessage(fakePdf(19_999, 4), 'under'), pdfMessage(fakePdf(20_000, 5), 'at')]);
    const [under, at] = fileBlocks((await checkpointer.load('t'))!.messages);
    expect(under!.data).toBeDefined();
    expect(at!.ref).toBeDefined();
    expect(() => new MemoryCheckpointer({ blobThreshold: -1 })).toThrow(ConfigurationError);
    expect(() => new MemoryCheckpointer({ blobs: {} as never })).toThrow(ConfigurationError);
  });
});

describe('a ref with no blob store', () => {
  it('fails the run with BlobMissingError (no_store) before the provider is called', async () => {
    const pdf = fakePdf(10_000, 6);
    const checkpointer = new MemoryCheckpointer();
    await checkpointer.append('t', [pdfMessage(pdf, 'stored')]);
    const history = (await checkpointer.load('t'))!.messages;
    const faux = new FauxProvider({ responses: [fauxMessage('never')] });
    const run = runAgentLoop({ provider: faux, model: { id: 'faux', provider: 'faux' }, history, prompts: [] });
    const error = await lastValueFrom(run.pipe(toArray())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlobMissingError);
    expect((error as Error).message).toContain('no blob store');
    expect(faux.callCount).toBe(0);
    // With the store, the same history resolves.
    const ok = new FauxProvider({ responses: [fauxMessage('read')] });
    await lastValueFrom(
      runAgentLoop({
        provider: ok,
        model: { id: 'faux', provider: 'faux' },
        history,
        prompts: [],
        blobs: checkpointer.blobs,
      }).pipe(toArray()),
    );
    expect(ok.callCount).toBe(1);
  });
});
