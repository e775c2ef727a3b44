/**
 * A compaction as stored with the thread: the summary, the messages it replaces, and a fingerprint that ties it to
 * this thread's history.
 * @module
 */
import type { Message } from '../types/messages.js';
import { hashInput } from './hash-input.js';

/** The run-state key a compaction is stored under (reserved: patches from hooks may not touch it). */
export const COMPACTION_KEY = 'cubepi:compaction';

/**
 * A stored compaction. `summary` stands for the stored messages `1 … throughSeq` (it summarised the previous entry's
 * summary and the messages `fromSeq + 1 … throughSeq`); `fingerprint` identifies message `throughSeq` (a hash of its
 * canonical JSON), so a thread whose history differs there (a fork cut earlier, then grown) never applies it.
 */
export interface CompactionEntry {
  readonly summary: string;
  readonly fromSeq: number;
  readonly throughSeq: number;
  readonly fingerprint: string;
  /** The model that wrote the summary. */
  readonly model: string;
  /** When it was stored (ms since the epoch); also the summary message's timestamp. */
  readonly createdAt: number;
}

/** The fingerprint of a message (16 hex digits of the SHA-256 of its canonical JSON). */
export function fingerprintOf(message: Message): string {
  return hashInput(message) ?? '';
}

/**
 * The compaction stored in `values` that applies to `transcript`: present, well-formed, within the transcript, and
 * whose fingerprint matches the transcript's message `throughSeq`. `undefined` otherwise.
 */
export function storedCompaction(
  values: Readonly<Record<string, unknown>>,
  transcript: readonly Message[],
): CompactionEntry | undefined {
  const entry = values[COMPACTION_KEY] as Partial<CompactionEntry> | undefined;
  if (
    typeof entry !== 'object' ||
    entry === null ||
    typeof entry.summary !== 'string' ||
    typeof entry.throughSeq !== 'number' ||
    typeof entry.fingerprint !== 'string' ||
    !Number.isInteger(entry.throughSeq) ||
    entry.throughSeq < 1 ||
    entry.throughSeq > transcript.length
  ) {
    return undefined;
  }
  return fingerprintOf(transcript[entry.throughSeq - 1]!) === entry.fingerprint
    ? (entry as CompactionEntry)
    : undefined;
}

/** The message that stands for the summarised messages in what the model receives (byte-stable for one entry). */
export function summaryMessage(entry: CompactionEntry): Message {
  return {
    role: 'user',
    content:
      `[Summary of the earlier conversation (messages 1–${entry.throughSeq}); the messages after it follow as they ` +
      `were.]\n\n${entry.summary}`,
    timestamp: entry.createdAt,
  };
}
