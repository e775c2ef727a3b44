/**
 * What a checkpointer with a blob store does to a batch before it stores it: each file block's `data` at or over the
 * threshold becomes a `ref` (its content address) and a `size`, the bytes going to the blob store instead of the row.
 * Browser-safe (the `MemoryCheckpointer` uses it too).
 * @module
 */
import type { BlobStore } from '../types/blob.js';
import type { BlobRef, FileContent } from '../types/content.js';
import { ConfigurationError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import { blobRefOf, decodeBase64 } from './blob-bytes.js';

/** The default {@link BlobOptions.blobThreshold}: 4 KiB. */
export const DEFAULT_BLOB_THRESHOLD = 4096;

/** The blob options every built-in checkpointer takes. */
export interface BlobOptions {
  /**
   * Where file bytes go. The SQLite and PostgreSQL checkpointers default to a table of their own (`<prefix>blobs`,
   * written in the same transaction as the messages), the `MemoryCheckpointer` to a `MemoryBlobStore` of its own;
   * another `BlobStore` (a `FileSystemBlobStore`, …) is written before the rows, and `false` keeps every file inline in
   * its row.
   */
  readonly blobs?: BlobStore | false | undefined;
  /**
   * The decoded size in bytes from which a file block's `data` is stored by reference (default 4096; `0`: every file
   * with `data`). Smaller files stay inline: a row is cheaper than a blob for them.
   */
  readonly blobThreshold?: number | undefined;
}

/** A batch as it is stored: its messages with `ref`s, the new blobs, the distinct refs it holds. */
export interface OffloadedBatch {
  readonly messages: readonly Message[];
  /** The bytes to store, by address (each once, whatever the number of blocks holding them). */
  readonly blobs: ReadonlyMap<BlobRef, Uint8Array>;
  /** Every distinct ref in the batch (new ones and ones the messages already held), with the index of its first message. */
  readonly refs: ReadonlyMap<BlobRef, number>;
}

/** The threshold of `options`, checked (a `ConfigurationError` for anything but an integer from 0). */
export function checkBlobThreshold(options: BlobOptions): number {
  const threshold = options.blobThreshold ?? DEFAULT_BLOB_THRESHOLD;
  if (!Number.isSafeInteger(threshold) || threshold < 0) {
    throw new ConfigurationError(`blobThreshold must be an integer from 0, got ${String(threshold)}`);
  }
  const blobs = options.blobs;
  if (blobs !== undefined && blobs !== false) {
    const store = blobs as Partial<BlobStore> | null;
    if (typeof store?.put !== 'function' || typeof store.get !== 'function' || typeof store.delete !== 'function') {
      throw new ConfigurationError('`blobs` must be a BlobStore (put, get, delete) or false');
    }
  }
  return threshold;
}

/** Whether any message of the batch holds a file block (the common batch has none: nothing to do, nothing awaited). */
export function hasFiles(messages: readonly Message[]): boolean {
  for (const message of messages) {
    if (message.role === 'assistant' || typeof message.content === 'string') continue;
    for (const block of message.content) if (block.type === 'file') return true;
  }
  return false;
}

/**
 * The batch as stored: each file block whose canonical base64 `data` decodes to `threshold` bytes or more gets `ref` and
 * `size` instead of `data`. `data` that is not canonical base64 stays inline, so the bytes restored are always the text
 * written (a provider's prompt cache stays warm across a restore).
 */
export async function offloadFiles(messages: readonly Message[], threshold: number): Promise<OffloadedBatch> {
  const blobs = new Map<BlobRef, Uint8Array>();
  const refs = new Map<BlobRef, number>();
  const out: Message[] = [];
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    if (message.role === 'assistant' || typeof message.content === 'string') {
      out.push(message);
      continue;
    }
    let content: (typeof message.content)[number][] | undefined;
    for (let i = 0; i < message.content.length; i++) {
      const block = message.content[i]!;
      if (block.type !== 'file') continue;
      const stored = await storedBlock(block, threshold, blobs);
      if (stored.ref !== undefined && !refs.has(stored.ref)) refs.set(stored.ref, index);
      if (stored === block) continue;
      content ??= message.content.slice();
      content[i] = stored;
    }
    out.push(content === undefined ? message : { ...message, content });
  }
  return { messages: out, blobs, refs };
}

async function storedBlock(
  block: FileContent,
  threshold: number,
  blobs: Map<BlobRef, Uint8Array>,
): Promise<FileContent> {
  const { data } = block;
  // Decoded size is 3/4 of the text less the padding: skip small files without decoding them.
  if (typeof data !== 'string' || (data.length / 4) * 3 < threshold) return block;
  const bytes = decodeBase64(data);
  if (bytes === undefined || bytes.length < threshold) return block;
  const ref = await blobRefOf(bytes);
  blobs.set(ref, bytes);
  const { data: _data, ...rest } = block;
  return { ...rest, ref, size: bytes.length };
}
