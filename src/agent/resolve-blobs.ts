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
  readonly #data = new Map<BlobRef, string>();
  #cachedBytes = 0;
  readonly #resolved = new WeakMap<Message, Message>();

  constructor(store: BlobStore | undefined) {
    this.#store = store;
  }

  /** `messages` with every `ref` replaced by `data`; rejects with `BlobMissingError` naming the first block it cannot. */
  async resolve(messages: readonly Message[]): Promise<readonly Message[]> {
    const out = messages.slice();
    for (let index = 0; index < out.length; index++) {
      const message = out[index]!;
      if (!holdsRef(message)) continue;
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
 * The step before a model request: `messages` as sent, every file block holding a `ref` given its `data` again
 * (fetched through the run's `BlobResolver`). The same array when none holds a `ref` (no wait, nothing allocated). A
 * missing blob throws `BlobMissingError`, which fails the run before anything is sent.
 */
export function* resolveBlobs(
  resolver: BlobResolver | undefined,
  messages: readonly Message[],
): Op<readonly Message[]> {
  if (!messages.some(holdsRef)) return messages;
  const resolving = (resolver ?? new BlobResolver(undefined)).resolve(messages);
  return (yield wait(resolving, messages)) as readonly Message[];
}

function holdsRef(message: Message): boolean {
  if (message.role === 'assistant' || typeof message.content === 'string') return false;
  for (const block of message.content) {
    if (block.type === 'file' && block.ref !== undefined && block.data === undefined) return true;
  }
  return false;
}
