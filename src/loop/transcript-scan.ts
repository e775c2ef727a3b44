/**
 * What the capability check reads of a run's transcript, read once: the transcript only grows.
 * @module
 */
import type { Message } from '../types/messages.js';
import type { Model, ModelInputKind } from '../types/model.js';
import { estimateMessageTokens, tokenFamily } from '../middleware/estimate-tokens.js';
import { FULL_SCAN, inputKindsOf, type MessageScan } from '../middleware/model-incapability.js';

/**
 * A {@link MessageScan} for one run: for the run's own transcript it remembers the input kinds its messages need (in
 * the order they first appear) and their estimated tokens (per provider family), and reads only the messages added
 * since the previous model call; any other list of messages (a context a hook rebuilt) is read whole, as
 * `modelIncapability` reads it. The transcript's messages never change and it is only appended to (as
 * `BlobResolver.refsIn` relies on), so both answers equal a full scan's: the first kind missing from `input` in
 * first-appearance order is the kind of the first block that needs a missing kind.
 */
export class TranscriptScan implements MessageScan {
  readonly #transcript: readonly Message[];
  #scanned = 0;
  readonly #kinds: ModelInputKind[] = [];
  // Per provider family: how many messages are summed, and their tokens.
  readonly #tokens = new Map<object, { counted: number; sum: number }>();

  constructor(transcript: readonly Message[]) {
    this.#transcript = transcript;
  }

  missingInput(messages: readonly Message[], input: readonly ModelInputKind[]): ModelInputKind | undefined {
    if (messages !== this.#transcript) return FULL_SCAN.missingInput(messages, input);
    for (; this.#scanned < messages.length; this.#scanned++) {
      for (const kind of inputKindsOf(messages[this.#scanned]!)) {
        if (!this.#kinds.includes(kind)) this.#kinds.push(kind);
      }
    }
    for (const kind of this.#kinds) if (!input.includes(kind)) return kind;
    return undefined;
  }

  messageTokens(model: Model, messages: readonly Message[]): number {
    if (messages !== this.#transcript) return FULL_SCAN.messageTokens(model, messages);
    const family = tokenFamily(model);
    let tally = this.#tokens.get(family);
    if (tally === undefined) this.#tokens.set(family, (tally = { counted: 0, sum: 0 }));
    if (tally.counted < messages.length) {
      tally.sum += estimateMessageTokens(model, messages.slice(tally.counted));
      tally.counted = messages.length;
    }
    return tally.sum;
  }
}
