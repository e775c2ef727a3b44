/**
 * `cubepi/blobs/filesystem`: a `BlobStore` in a directory (Node.js only).
 * @module
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from '../types/blob.js';
import type { BlobRef } from '../types/content.js';
import { ConfigurationError } from '../types/errors.js';
import { toCheckpointError } from '../types/to-checkpoint-error.js';
import { blobRefOf, checkBlobRef, checkBytes } from './blob-bytes.js';

export type { BlobStore, BlobRef };

/** Options of {@link FileSystemBlobStore}. */
export interface FileSystemBlobStoreOptions {
  /**
   * Flush each blob to the disk (`fsync`) before it is renamed into place (default `true`): a `put` that resolved
   * survives a power loss. `false` leaves it to the operating system (a crash of the process still loses nothing).
   */
  readonly fsync?: boolean | undefined;
}

/**
 * A `BlobStore` in a directory: one file per blob, named by its SHA-256, under two levels of fan-out directories
 * (`ab/cd/abcd…`), so no directory grows past a few thousand entries. Node.js only (its own entry, keeping `cubepi`
 * free of `node:fs`).
 *
 * A `put` writes a temporary file next to its final place and renames it there (atomic on POSIX file systems): a
 * reader sees the whole blob or none, a failed or interrupted `put` leaves at most a `.tmp-*` file and never a partial
 * blob, and two processes putting the same bytes both succeed. Bytes already stored are not written again. Failures
 * (a full disk, a read-only directory) reject with a `CheckpointError` (the `fs` error as `cause`); a bad address
 * with `InvalidInputError`.
 *
 * @example
 * import { FileSystemBlobStore } from 'cubepi/blobs/filesystem';
 * import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
 * const checkpointer = new SQLiteCheckpointer('threads.db', { blobs: new FileSystemBlobStore('blobs') });
 */
export class FileSystemBlobStore implements BlobStore {
  /** The directory the blobs are in (created at the first `put`). */
  readonly directory: string;
  readonly #fsync: boolean;

  /** Throws `ConfigurationError` for an empty directory name. */
  constructor(directory: string, options: FileSystemBlobStoreOptions = {}) {
    if (typeof directory !== 'string' || directory.length === 0) {
      throw new ConfigurationError('FileSystemBlobStore needs a directory');
    }
    this.directory = directory;
    this.#fsync = options.fsync ?? true;
  }

  /** The path of the file holding `ref`'s bytes. */
  pathOf(ref: BlobRef): string {
    const hex = checkBlobRef(ref).slice('sha256:'.length);
    return join(this.directory, hex.slice(0, 2), hex.slice(2, 4), hex);
  }

  /** {@inheritDoc BlobStore.put} */
  async put(bytes: Uint8Array): Promise<BlobRef> {
    const ref = await blobRefOf(checkBytes(bytes));
    const path = this.pathOf(ref);
    try {
      if (await exists(path)) return ref;
      const dir = join(path, '..');
      await mkdir(dir, { recursive: true });
      const temp = join(dir, `.tmp-${randomBytes(8).toString('hex')}`);
      try {
        const file = await open(temp, 'wx');
        try {
          await file.writeFile(bytes);
          if (this.#fsync) await file.sync();
        } finally {
          await file.close();
        }
        await rename(temp, path);
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
      return ref;
    } catch (error) {
      throw toCheckpointError(error, 'append');
    }
  }

  /** {@inheritDoc BlobStore.get} */
  async get(ref: BlobRef): Promise<Uint8Array | undefined> {
    const path = this.pathOf(ref);
    try {
      const buffer = await readFile(path);
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
      throw toCheckpointError(error, 'load');
    }
  }

  /** {@inheritDoc BlobStore.delete} */
  async delete(ref: BlobRef): Promise<void> {
    const path = this.pathOf(ref);
    try {
      await rm(path, { force: true });
    } catch (error) {
      throw toCheckpointError(error, 'deleteThread');
    }
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return false;
    throw error;
  }
}
