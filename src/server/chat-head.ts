/**
 * The fork a thread id serves since a regenerate, kept with the thread: how a server restarted on the same
 * checkpointer keeps serving a chat's newest branch.
 * @module
 */
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { HEAD_KEY } from '../agent/stored-extra.js';

/**
 * The fork `threadId` names, from its stored `extra` (key {@link HEAD_KEY}): `{ of, threadId }`, read only on the
 * thread `of` names, so a fork of that thread (which copies its `extra`) does not inherit the mapping.
 */
export function storedHead(threadId: string, extra: Readonly<Record<string, unknown>>): string | undefined {
  const head = extra[HEAD_KEY] as { of?: unknown; threadId?: unknown } | null | undefined;
  if (typeof head !== 'object' || head === null || head.of !== threadId) return undefined;
  return typeof head.threadId === 'string' && head.threadId !== '' ? head.threadId : undefined;
}

/**
 * Records on `threadId` that it now serves `head`: its `extra` with {@link HEAD_KEY} set, every other key kept. The
 * thread's messages are not touched (its `seq` does not change). The thread's own agent has moved to the fork, so
 * nothing else writes this record meanwhile.
 */
export async function saveHead(checkpointer: Checkpointer, threadId: string, head: string): Promise<void> {
  const data = await checkpointer.load(threadId);
  await checkpointer.saveExtra(threadId, { ...data?.extra, [HEAD_KEY]: { of: threadId, threadId: head } });
}
