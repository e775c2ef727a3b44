/**
 * The SQLite checkpointer's own blob table, as a `BlobStore`.
 * @module
 */
import type Database from 'better-sqlite3';
import type { BlobStore } from '../types/blob.js';
import type { BlobRef } from '../types/content.js';
import { toCheckpointError } from '../types/to-checkpoint-error.js';
import { blobRefOf, checkBlobRef, checkBytes } from './blob-bytes.js';
import { retryWhileBusy } from './retry-while-busy.js';

/**
 * A `BlobStore` on the `<prefix>blobs` table of a `SQLiteCheckpointer`'s file, on its connection: what
 * `checkpointer.blobs` is by default. The checkpointer writes a batch's blobs in the same transaction as its rows and
 * deletes them with the last thread referring to them; this store's own `put`/`get`/`delete` are the plain contract
 * (a `delete` here ignores references: a thread still holding the ref then fails at restore with `BlobMissingError`).
 * Made by the checkpointer, whose constructor creates the table (schema 4).
 */
export class SQLiteBlobStore implements BlobStore {
  readonly #db: Database.Database;
  readonly #busyTimeoutMs: number;
  readonly #insert: Database.Statement<[string, number, Uint8Array]>;
  readonly #select: Database.Statement<[string], Buffer>;
  readonly #delete: Database.Statement<[string]>;

  /** @internal Made by `SQLiteCheckpointer` once its tables exist. */
  constructor(db: Database.Database, blobsTable: string, busyTimeoutMs: number) {
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#insert = insertBlobStatement(db, blobsTable);
    this.#select = db.prepare<[string], Buffer>(`SELECT bytes FROM ${blobsTable} WHERE ref = ?`).pluck();
    this.#delete = db.prepare(`DELETE FROM ${blobsTable} WHERE ref = ?`);
  }

  /** {@inheritDoc BlobStore.put} */
  async put(bytes: Uint8Array): Promise<BlobRef> {
    try {
      const ref = await blobRefOf(checkBytes(bytes));
      const write = (): BlobRef => (this.#insert.run(ref, bytes.length, bytes), ref);
      return await retryWhileBusy(write, { db: this.#db, limitMs: this.#busyTimeoutMs, operation: 'append' });
    } catch (error) {
      throw toCheckpointError(error, 'append');
    }
  }

  /** {@inheritDoc BlobStore.get} */
  async get(ref: BlobRef): Promise<Uint8Array | undefined> {
    try {
      checkBlobRef(ref);
      const read = (): Uint8Array | undefined => {
        const found = this.#select.get(ref);
        return found === undefined ? undefined : new Uint8Array(found);
      };
      return await retryWhileBusy(read, { db: this.#db, limitMs: this.#busyTimeoutMs, operation: 'load' });
    } catch (error) {
      throw toCheckpointError(error, 'load');
    }
  }

  /** {@inheritDoc BlobStore.delete} */
  async delete(ref: BlobRef): Promise<void> {
    try {
      checkBlobRef(ref);
      const remove = (): void => void this.#delete.run(ref);
      await retryWhileBusy(remove, { db: this.#db, limitMs: this.#busyTimeoutMs, operation: 'deleteThread' });
    } catch (error) {
      throw toCheckpointError(error, 'deleteThread');
    }
  }
}

/** The insert of a blob that does nothing when the address is stored already (same address, same bytes). */
export function insertBlobStatement(
  db: Database.Database,
  blobsTable: string,
): Database.Statement<[string, number, Uint8Array]> {
  return db.prepare(`INSERT INTO ${blobsTable} (ref, size, bytes) VALUES (?, ?, ?) ON CONFLICT (ref) DO NOTHING`);
}
