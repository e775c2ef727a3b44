/**
 * Files stored by reference, resolved before a model request: providers never see a `ref`.
 * @module
 */
import type { BlobStore } from '../types/blob.js';
import type { BlobRef, FileContent } from '../types/content.js';
import { BlobMissingError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import { encodeBase64 } from '../checkpoint/blob-bytes.js';
import { wait, type Op } from './drive.js';

/** How many bytes of resolved files a run keeps (as base64) so that its later turns do not fetch them again. */
const CACHE_BYTES = 64 * 1024 * 1024;

/**
 * A run's view of its blob store: the base64 of each blob fetched, kept (least recently used out first, up to
 * 64 MiB) so that a turn does not fetch again what the previous one sent, and each resolved message, so that every
 * turn sends the very same message objects.
 */
export class BlobResolver {
  readonly #store: BlobStore | undefined;
  // Made at the first ref (most runs never see one).
  #data: Map<BlobRef, string> | undefined;
  #cachedBytes = 0;
  #resolved: WeakMap<Message, Message> | undefined;
  // The run's transcript only grows and its messages never change: what was scanned of it stays scanned, so a turn
  // looks only at the messages added since the previous one (no O(history) scan per turn).
  #transcript: readonly Message[] | undefined;
  #scanned = 0;
  readonly #withRefs: number[] = [];

  /** A resolver reading from `store` (`undefined`: a `ref` fails with `BlobMissingError`, reason `no_store`). */
  constructor(store: BlobStore | undefined, transcript?: readonly Message[]) {
    this.#store = store;
    this.#transcript = transcript;
  }

  /** The indexes of `messages` holding a `ref` (incrementally for the run's own transcript). */
  refsIn(messages: readonly Message[]): readonly number[] {
    if (messages !== this.#transcript) {
      const found: number[] = [];
      for (let i = 0; i < messages.length; i++) if (holdsRef(messages[i]!)) found.push(i);
      return found;
    }
    for (; this.#scanned < messages.length; this.#scanned++) {
      if (holdsRef(messages[this.#scanned]!)) this.#withRefs.push(this.#scanned);
    }
    return this.#withRefs;
  }

  /**
   * `messages` with every `ref` (at `indexes`, from {@link refsIn}) replaced by `data`; rejects with
   * `BlobMissingError` naming the first block it cannot resolve.
   */
  async resolve(messages: readonly Message[], indexes: readonly number[]): Promise<readonly Message[]> {
    const out = messages.slice();
    this.#resolved ??= new WeakMap();
    for (const index of indexes) {
      const message = out[index]!;
      const known = this.#resolved.get(message);
      if (known !== undefined) {
        out[index] = known;
        continue;
      }
      const content = (message.content as readonly (FileContent | { readonly type: string })[]).slice();
      for (let block = 0; block < content.length; block++) {
        const file = content[block] as FileContent;
        if (file.type !== 'file' || file.ref === undefined || file.data !== undefined) continue;
        const { ref: _ref, ...rest } = file;
        content[block] = { ...rest, data: await this.#fetch(file.ref, index, block) };
      }
      const resolved = { ...message, content } as Message;
      this.#resolved.set(message, resolved);
      out[index] = resolved;
    }
    return out;
  }

  async #fetch(ref: BlobRef, messageIndex: number, blockIndex: number): Promise<string> {
    this.#data ??= new Map();
    const cached = this.#data.get(ref);
    if (cached !== undefined) {
      // Most recently used last.
      this.#data.delete(ref);
      this.#data.set(ref, cached);
      return cached;
    }
    if (this.#store === undefined) throw new BlobMissingError(ref, messageIndex, blockIndex, 'no_store');
    const bytes = await this.#store.get(ref);
    if (bytes === undefined) throw new BlobMissingError(ref, messageIndex, blockIndex, 'not_found');
    const data = encodeBase64(bytes);
    this.#data.set(ref, data);
    this.#cachedBytes += data.length;
    for (const [old, text] of this.#data) {
      if (this.#cachedBytes <= CACHE_BYTES || old === ref) break;
      this.#data.delete(old);
      this.#cachedBytes -= text.length;
    }
    return data;
  }
}

/**
 * The step before a model request: `messages` as sent, every file block holding a `ref` (at `indexes`, from
 * `resolver.refsIn(messages)`: the turn checks that first, and enters this step only when there is one) given its
 * `data` again (fetched through the run's `BlobResolver`). The same array when `indexes` is empty. A missing blob
 * throws `BlobMissingError`, which fails the run before anything is sent.
 */
export function* resolveBlobs(
  resolver: BlobResolver,
  messages: readonly Message[],
  indexes: readonly number[],
): Op<readonly Message[]> {
  if (indexes.length === 0) return messages;
  return (yield wait(resolver.resolve(messages, indexes), messages)) as readonly Message[];
}

function holdsRef(message: Message): boolean {
  if (message.role === 'assistant' || typeof message.content === 'string') return false;
  for (const block of message.content) {
    if (block.type === 'file' && block.ref !== undefined && block.data === undefined) return true;
  }
  return false;
}
