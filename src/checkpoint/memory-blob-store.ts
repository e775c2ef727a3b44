import type { BlobStore } from '../types/blob.js';
import type { BlobRef } from '../types/content.js';
import { blobRefOf, checkBlobRef, checkBytes } from './blob-bytes.js';

/**
 * A `BlobStore` in this process's memory (browser-safe: content addresses through Web Crypto). For tests, demos and
 * the `MemoryCheckpointer`, which uses one of its own by default. Keeps a copy of what it is given and returns a copy,
 * so neither side can change the other's bytes. Nothing survives the process.
 *
 * @example
 * const blobs = new MemoryBlobStore();
 * const ref = await blobs.put(new TextEncoder().encode('hello'));   // 'sha256:2cf24d…'
 * (await blobs.get(ref))?.length;                                     // 5
 */
export class MemoryBlobStore implements BlobStore {
  readonly #blobs = new Map<BlobRef, Uint8Array>();

  /** {@inheritDoc BlobStore.put} */
  async put(bytes: Uint8Array): Promise<BlobRef> {
    const ref = await blobRefOf(checkBytes(bytes));
    this.putSync(ref, bytes);
    return ref;
  }

  /** {@inheritDoc BlobStore.get} */
  async get(ref: BlobRef): Promise<Uint8Array | undefined> {
    const bytes = this.#blobs.get(checkBlobRef(ref));
    return bytes === undefined ? undefined : bytes.slice();
  }

  /** {@inheritDoc BlobStore.delete} */
  async delete(ref: BlobRef): Promise<void> {
    this.#blobs.delete(checkBlobRef(ref));
  }

  /** The number of blobs held (for tests and the checkpointer's accounting). */
  get size(): number {
    return this.#blobs.size;
  }

  /**
   * Stores `bytes` under `ref` without yielding: for a caller that already computed the address (the
   * `MemoryCheckpointer`, whose append must not yield between its check and its write). Internal.
   * @internal
   */
  putSync(ref: BlobRef, bytes: Uint8Array): void {
    if (!this.#blobs.has(ref)) this.#blobs.set(ref, bytes.slice());
  }

  /** Removes `ref` without yielding (the `MemoryCheckpointer`'s deletion). Internal. @internal */
  deleteSync(ref: BlobRef): void {
    this.#blobs.delete(ref);
  }
}
