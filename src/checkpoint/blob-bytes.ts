/**
 * The byte helpers of blob stores, browser-safe (no `node:` module): content addresses through Web Crypto, base64
 * both ways, and the check of an address given by a caller.
 * @module
 */
import type { BlobRef } from '../types/content.js';
import { InvalidInputError } from '../types/errors.js';

const REF = /^sha256:[0-9a-f]{64}$/;

/** Whether `value` is a well-formed {@link BlobRef}: `sha256:` and 64 lowercase hex digits. */
export function isBlobRef(value: unknown): value is BlobRef {
  return typeof value === 'string' && REF.test(value);
}

/** `ref` itself when well-formed; otherwise an `InvalidInputError` naming it (a store never looks up a bad address). */
export function checkBlobRef(ref: unknown): BlobRef {
  if (!isBlobRef(ref)) {
    const shown = typeof ref === 'string' ? JSON.stringify(ref.slice(0, 80)) : typeof ref;
    throw new InvalidInputError(`A blob ref must be "sha256:" and 64 lowercase hex digits, got ${shown}`);
  }
  return ref;
}

/** `bytes` itself when it is a `Uint8Array`; otherwise an `InvalidInputError`. */
export function checkBytes(bytes: unknown): Uint8Array {
  if (!(bytes instanceof Uint8Array))
    throw new InvalidInputError(`Blob bytes must be a Uint8Array, got ${typeof bytes}`);
  return bytes;
}

/** The content address of `bytes`: `sha256:` and its SHA-256 in lowercase hex (Web Crypto, so it runs anywhere). */
export async function blobRefOf(bytes: Uint8Array): Promise<BlobRef> {
  // The cast is for the browser build (its DOM types take only an ArrayBuffer-backed view); Node's types need none.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  let hex = '';
  for (let i = 0; i < digest.length; i++) hex += digest[i]!.toString(16).padStart(2, '0');
  return `sha256:${hex}`;
}

// Node's Buffer when there is one (10× faster on megabytes); the standard atob/btoa elsewhere.
// Typed by hand: the browser build has no Node types.
interface NodeBufferClass {
  from(data: string, encoding: 'base64'): Uint8Array;
  from(buffer: ArrayBufferLike, byteOffset: number, length: number): { toString(encoding: 'base64'): string };
}
const NodeBuffer = (globalThis as { Buffer?: NodeBufferClass }).Buffer;

/** The bytes of base64 `data`; `undefined` when `data` is not canonical base64 (padded, no whitespace). */
export function decodeBase64(data: string): Uint8Array | undefined {
  if (data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return undefined;
  let bytes: Uint8Array;
  if (NodeBuffer !== undefined) {
    const buffer = NodeBuffer.from(data, 'base64');
    bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  } else {
    const binary = atob(data);
    bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  }
  // Non-zero padding bits decode too, but would not encode back to the same text: not canonical.
  return encodeBase64(bytes) === data ? bytes : undefined;
}

/** `bytes` as canonical base64 (padded, no line breaks). */
export function encodeBase64(bytes: Uint8Array): string {
  if (NodeBuffer !== undefined)
    return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
