/**
 * Blob stores: large payloads (files) kept by content address, out of checkpoint rows. See `docs/files.md`.
 * @module
 */
import type { BlobRef } from './content.js';

/**
 * Bytes kept by content address ({@link BlobRef}: `sha256:<hex>` of the bytes). `put` of bytes already stored stores
 * nothing more and returns the same address; `get` of an address never stored (or deleted) resolves `undefined`;
 * `delete` of one is a no-op. Every method rejects with a typed error (`CheckpointError` for a failing backend), and a
 * failed `put` leaves nothing half-written. Implementations: memory, filesystem, SQLite and PostgreSQL (the
 * checkpointers' own databases).
 */
export interface BlobStore {
  put(bytes: Uint8Array): Promise<BlobRef>;
  get(ref: BlobRef): Promise<Uint8Array | undefined>;
  delete(ref: BlobRef): Promise<void>;
}
