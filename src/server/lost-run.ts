/**
 * Runs a server lost with its process: how `createAgentServer` records in the thread which run a prompt started, how
 * it finds a run that started and never ended (the process stopped mid-run), and the messages that close it.
 * @module
 */
import { APPROVALS_KEY } from '../agent/stored-extra.js';
import { interruptedToolResults } from '../agent/checkpoint-session.js';
import { userMessage, type AssistantMessage, type Message, type UserMessage } from '../types/messages.js';
import { EMPTY_USAGE } from '../types/usage.js';

/**
 * The metadata key under which a server's prompt run stores its run id with its (last) user message: how a later
 * process knows which run a stored prompt started. Reserved.
 */
export const SERVER_RUN_METADATA_KEY = 'cubepi:run';

/** `input` with its last user message carrying `runId` ({@link SERVER_RUN_METADATA_KEY}). */
export function withServerRun(
  input: string | UserMessage | readonly UserMessage[],
  runId: string,
): UserMessage | readonly UserMessage[] {
  const tag = (message: UserMessage): UserMessage => ({
    ...message,
    metadata: { ...message.metadata, [SERVER_RUN_METADATA_KEY]: runId },
  });
  if (typeof input === 'string') return tag(userMessage(input));
  if (!Array.isArray(input)) return tag(input as UserMessage);
  const list = input as readonly UserMessage[];
  return list.length === 0 ? list : [...list.slice(0, -1), tag(list[list.length - 1]!)];
}

/** The metadata key of the closing message of a lost run: the id of the run it closes. Reserved. */
export const RUN_LOST_METADATA_KEY = 'cubepi:run_lost';

/** The `errorMessage` of the closing message of a lost run. */
export const RUN_LOST_MESSAGE = 'The run was interrupted: the server stopped before it finished.';

/** A run of a stored thread that started and never ended, or one already closed as lost. */
export interface LostRun {
  readonly runId: string;
  /** Index of the run's user message in the thread. */
  readonly from: number;
  /** Index past the run's closing message, once closed (else the thread's length). */
  readonly to: number;
  /** True when the thread still needs its closing messages ({@link closeLostRun}). */
  readonly open: boolean;
}

/**
 * The last server-started run of `messages` when it never ended: its user message is followed by no final assistant
 * message (one with a `stopReason` other than `toolUse`), and no approval is pending (a suspended run waits, it is
 * not lost). Also found, with `open: false`, once the thread holds that run's closing message. `runId`
 * narrows the search to that run. `undefined` otherwise (the run ended, or no server run is stored).
 */
export function findLostRun(
  messages: readonly Message[],
  extra: Readonly<Record<string, unknown>>,
  runId?: string,
): LostRun | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    const found = message.metadata?.[SERVER_RUN_METADATA_KEY];
    if (typeof found !== 'string' || (runId !== undefined && found !== runId)) continue;
    const record = { runId: found };
    const after = messages.slice(i + 1);
    const closing = after.findIndex(
      (m) => m.role === 'assistant' && m.metadata?.[RUN_LOST_METADATA_KEY] === record.runId,
    );
    if (closing >= 0) return { runId: record.runId, from: i, to: i + 2 + closing, open: false };
    const ended = after.some((m) => m.role === 'assistant' && m.stopReason !== 'toolUse');
    if (ended || extra[APPROVALS_KEY] !== undefined) return undefined;
    return { runId: record.runId, from: i, to: messages.length, open: true };
  }
  return undefined;
}

/**
 * The messages that close a lost run, so the next prompt is well-formed: an `interrupted` error result for each tool
 * call without one (as a restore gives them), then an assistant message with `stopReason: 'aborted'` and
 * {@link RUN_LOST_MESSAGE}, marked with the run's id ({@link RUN_LOST_METADATA_KEY}). Record-only: never replayed to a
 * model.
 */
export function closeLostRun(messages: readonly Message[], runId: string): Message[] {
  const closing: AssistantMessage = {
    role: 'assistant',
    content: [],
    stopReason: 'aborted',
    errorMessage: RUN_LOST_MESSAGE,
    usage: EMPTY_USAGE,
    provider: 'cubepi',
    model: 'cubepi-server',
    timestamp: Date.now(),
    metadata: { [RUN_LOST_METADATA_KEY]: runId },
  };
  return [...interruptedToolResults(messages), closing];
}
