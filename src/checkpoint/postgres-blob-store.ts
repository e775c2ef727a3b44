/**
 * The PostgreSQL checkpointer's own blob table, as a `BlobStore`.
 * @module
 */
import type { BlobStore } from '../types/blob.js';
import type { BlobRef } from '../types/content.js';
import { toCheckpointError } from '../types/to-checkpoint-error.js';
import { blobRefOf, checkBlobRef, checkBytes } from './blob-bytes.js';

/** How the store reaches the checkpointer's pool: its query (array rows, values as the server's text) and migration. */
export interface PostgresBlobAccess {
  readonly query: (text: string, values: unknown[]) => Promise<{ rows: unknown[][] }>;
  readonly ready: () => Promise<void>;
  /** The quoted, schema-qualified blob table. */
  readonly table: string;
}

/**
 * A `BlobStore` on the `<prefix>blobs` table (`bytea`) of a `PostgresCheckpointer`, on its pool: what
 * `checkpointer.blobs` is by default. The checkpointer writes a batch's blobs in the same transaction as its rows and
 * deletes them with the last thread referring to them; this store's own `put`/`get`/`delete` are the plain contract
 * (a `delete` here ignores references: a thread still holding the ref then fails at restore with `BlobMissingError`).
 * Made by the checkpointer; its tables are created on first use, as the checkpointer's are.
 */
export class PostgresBlobStore implements BlobStore {
  readonly #access: PostgresBlobAccess;

  /** @internal Made by `PostgresCheckpointer`. */
  constructor(access: PostgresBlobAccess) {
    this.#access = access;
  }

  /** {@inheritDoc BlobStore.put} */
  async put(bytes: Uint8Array): Promise<BlobRef> {
    try {
      const ref = await blobRefOf(checkBytes(bytes));
      await this.#access.ready();
      await this.#access.query(insertBlobSql(this.#access.table), [ref, bytes.length, toBuffer(bytes)]);
      return ref;
    } catch (error) {
      throw toCheckpointError(error, 'append');
    }
  }

  /** {@inheritDoc BlobStore.get} */
  async get(ref: BlobRef): Promise<Uint8Array | undefined> {
    try {
      checkBlobRef(ref);
      await this.#access.ready();
      const found = await this.#access.query(`SELECT encode(bytes, 'hex') FROM ${this.#access.table} WHERE ref = $1`, [
        ref,
      ]);
      return found.rows.length === 0 ? undefined : byteaOf(found.rows[0]![0] as string);
    } catch (error) {
      throw toCheckpointError(error, 'load');
    }
  }

  /** {@inheritDoc BlobStore.delete} */
  async delete(ref: BlobRef): Promise<void> {
    try {
      checkBlobRef(ref);
      await this.#access.ready();
      await this.#access.query(`DELETE FROM ${this.#access.table} WHERE ref = $1`, [ref]);
    } catch (error) {
      throw toCheckpointError(error, 'deleteThread');
    }
  }
}

/**
 * The insert of a blob ($1 ref, $2 size, $3 bytes). An address stored already is not written again, but its row is
 * locked (`DO UPDATE … WHERE false` locks without updating) until the transaction ends: a deletion in another
 * transaction waits for it and then sees the reference this transaction committed.
 */
export function insertBlobSql(table: string): string {
  return `INSERT INTO ${table} (ref, size, bytes) VALUES ($1, $2, $3)
    ON CONFLICT (ref) DO UPDATE SET size = excluded.size WHERE false`;
}

/** `bytes` as the Buffer `pg` sends as `bytea`, without copying. */
export function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The bytes of `encode(bytes, 'hex')` (whatever the server's `bytea_output`). */
function byteaOf(hex: string): Uint8Array {
  const buffer = Buffer.from(hex, 'hex');
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}
