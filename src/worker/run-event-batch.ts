/**
 * The payload of one row of the run-event log's batch table (format 3): the frames of one appended batch, as one
 * compressed value. See `docs/scale-out.md` ("How it is stored").
 * @module
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/**
 * One frame as the log stores it: its wire JSON (for an event, the {@link SequencedEvent} itself, `runId` and `seq`
 * included, so a reader returns the very text a writer gave), whether it is a compact update (it grows the previous
 * snapshot) and whether it carries a whole assistant snapshot a compact update can grow (`base`). @internal
 */
export interface StoredFrame {
  readonly json: string;
  readonly compact: boolean;
  readonly base: boolean;
}

// The payload's first byte: how the rest is stored. A new byte is a new format; a reader refuses one it does not know.
const TEXT = 0;
const DEFLATE = 1;
// Below this many bytes of text, deflate's block header costs more than it saves (agent_start alone is ~60 bytes).
const COMPRESS_FROM = 160;
// zlib's default level. Measured on the bench's tiny runs (queue-runs.mjs; 2.6 batches, 10.5 KB of JSON per run):
// level 6 stores 1,546 bytes per run in ~80 µs, level 1 1,721 bytes in ~64 µs; brotli needs quality 5 (~130 µs) to be
// 6% smaller. The WAL saved is worth more than the writer's few microseconds.
const LEVEL = 6;

/** Flags, one character before each frame's JSON (JSON text never starts with these, nor holds a raw newline). */
const PLAIN = 'p';
const COMPACT = 'c';
const BASE = 'b';

/**
 * The payload of `frames` (at least one): each frame as a line `<flag><json>`, the lines joined by `\n`, deflated
 * (raw deflate) when that is smaller, behind a one-byte format tag. @internal
 */
export function encodeBatch(frames: readonly StoredFrame[]): Buffer {
  let text = '';
  for (let i = 0; i < frames.length; i++) {
    const frame = frames[i]!;
    if (i > 0) text += '\n';
    text += (frame.compact ? COMPACT : frame.base ? BASE : PLAIN) + frame.json;
  }
  const raw = Buffer.from(text, 'utf8');
  if (raw.length >= COMPRESS_FROM) {
    const deflated = deflateRawSync(raw, { level: LEVEL });
    if (deflated.length < raw.length) return Buffer.concat([Buffer.of(DEFLATE), deflated]);
  }
  return Buffer.concat([Buffer.of(TEXT), raw]);
}

/** The frames of a payload made by {@link encodeBatch}, in order; throws for a payload it cannot read. @internal */
export function decodeBatch(payload: Uint8Array): StoredFrame[] {
  const body = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).subarray(1);
  let text: string;
  if (payload[0] === TEXT) text = body.toString('utf8');
  else if (payload[0] === DEFLATE) text = inflateRawSync(body).toString('utf8');
  else throw new Error(`a stored batch has an unknown format (${String(payload[0])})`);
  return text.split('\n').map((line) => {
    const flag = line[0];
    if (flag !== PLAIN && flag !== COMPACT && flag !== BASE) throw new Error('a stored batch has a malformed frame');
    return { json: line.slice(1), compact: flag === COMPACT, base: flag === BASE };
  });
}
