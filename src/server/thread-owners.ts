/**
 * Where a server keeps who owns each thread: with the thread, in a checkpointer that stores owners (`claimThread`,
 * `threadOwner`: every built-in), else in this process's memory.
 * @module
 */
import type { Checkpointer } from '../checkpoint/checkpointer.js';

/** The owners of threads, as a server reads and claims them. @internal */
export interface ThreadOwners {
  /** The thread's owner: its id, `null` for an unowned thread, `undefined` for one that does not exist. */
  ownerOf(threadId: string): Promise<string | null | undefined>;
  /** Creates the thread owned by `owner` when it does not exist; resolves with the owner now stored. */
  claim(threadId: string, owner: string): Promise<string | null>;
  /** True when owners live in the checkpointer (they survive restarts, and `listThreads({ owner })` filters). */
  readonly stored: boolean;
}

/**
 * The owners of `checkpointer`'s threads when it stores owners; otherwise a map in memory, which forgets on restart
 * (then a thread's first claimant after the restart owns it: docs/security.md says to give the server a checkpointer).
 * @internal
 */
export function threadOwners(checkpointer: Checkpointer | undefined): ThreadOwners {
  if (typeof checkpointer?.claimThread === 'function' && typeof checkpointer.threadOwner === 'function') {
    const store = checkpointer as Required<Pick<Checkpointer, 'claimThread' | 'threadOwner'>>;
    return {
      ownerOf: (threadId) => store.threadOwner(threadId),
      claim: (threadId, owner) => store.claimThread(threadId, owner),
      stored: true,
    };
  }
  const owners = new Map<string, string>();
  return {
    ownerOf: async (threadId) => owners.get(threadId),
    claim: async (threadId, owner) => {
      const stored = owners.get(threadId);
      if (stored !== undefined) return stored;
      owners.set(threadId, owner);
      return owner;
    },
    stored: false,
  };
}
