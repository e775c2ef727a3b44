// A scripted run as wire frames, the same in every process: messages streamed as text deltas (so the log stores
// compact updates), each run ending with an `end` frame.
import { MessageAssembler, type AgentEvent, type SequencedEvent, type StreamEvent } from '../../src/index.js';
import type { WireFrame } from '../../src/worker/index.js';

/** Run `runId`'s frames: agent_start, `messages` assistant messages of `deltas` text deltas each, an end frame. */
export function scriptedRun(runId: string, messages: number, deltas: number): WireFrame[] {
  const frames: WireFrame[] = [];
  const push = (event: AgentEvent): void => {
    const seq = frames.length + 1;
    frames.push({ kind: 'event', seq, event: { ...event, seq } as SequencedEvent });
  };
  const update = (streamEvent: StreamEvent & { partial: never }): void =>
    push({ type: 'message_update', runId, message: streamEvent.partial, streamEvent });
  push({ type: 'agent_start', runId });
  for (let m = 0; m < messages; m++) {
    const asm = new MessageAssembler({ provider: 'scripted', model: 'm', timestamp: 1 });
    push({ type: 'message_start', runId, message: asm.start().partial });
    const text = asm.blockCount;
    update(asm.startText() as never);
    for (let d = 0; d < deltas; d++) update(asm.textDelta(text, `m${m}d${d} ü `) as never);
    update(asm.endText(text) as never);
    push({ type: 'message_end', runId, message: asm.done('stop').message });
  }
  frames.push({ kind: 'end', seq: frames.length + 1, runId });
  return frames;
}

/** The frames as plain JSON values (what a reader in another process must equal). */
export const plain = (frames: readonly WireFrame[]): unknown => JSON.parse(JSON.stringify(frames));
