/**
 * The ownership checks the routes of both servers make: claiming a thread for the principal that starts a run on it,
 * asking `authorize` before a thread or run is read, watched, answered or cancelled, and listing only what the
 * principal may see. A refusal looks like absence to the caller (the route answers as for a missing resource).
 * @module
 */
import type { Checkpointer, ThreadInfo } from '../checkpoint/checkpointer.js';
import { ANONYMOUS_PRINCIPAL, type Principal } from '../types/principal.js';
import type { Access, AccessAction } from './access.js';
import { HttpError } from './http.js';
import type { ThreadOwners } from './thread-owners.js';

/** A run as the ownership check sees it. @internal */
export interface OwnedRun {
  readonly runId: string;
  readonly threadId: string | undefined;
  readonly owner: string | null | undefined;
}

/** The ownership decisions of one server. @internal */
export interface Ownership {
  /**
   * Before a run starts on `threadId` (`start_run`, `chat`, `ag_ui`, `answer_approval` is not one: it needs an
   * existing thread): the thread is claimed for `principal` when it does not exist, and `authorize` asked. Resolves
   * with the thread's owner; throws 404 `unknown_thread` when refused.
   */
  claim(principal: Principal, action: AccessAction, threadId: string): Promise<string | null>;
  /**
   * Whether `principal` may do `action` on the existing thread: `undefined` when the thread does not exist (not a
   * refusal), else `authorize`'s verdict (a refusal counted and reported). Answer both falsy cases alike.
   */
  onThread(principal: Principal, action: AccessAction, threadId: string): Promise<{ owner: string | null } | undefined>;
  /** Whether `principal` may do `action` on the run (a refusal counted and reported). */
  onRun(principal: Principal, action: AccessAction, run: OwnedRun): Promise<boolean>;
  /** One page of `GET /threads` for `principal`: `{ threads, nextCursor }`. */
  list(principal: Principal, url: URL, fallback: () => readonly string[]): Promise<ListPage>;
}

/** A page of `GET /threads`. @internal */
export interface ListPage {
  readonly threads: readonly ThreadInfo[] | readonly { readonly threadId: string }[];
  /** The `after` of the next page; `null` after the last one. */
  readonly nextCursor: string | null;
}

/** @internal */
export function createOwnership(
  access: Access,
  owners: ThreadOwners,
  checkpointer: Checkpointer | undefined,
): Ownership {
  const refused = (threadId: string) => new HttpError(404, 'unknown_thread', `no thread ${threadId}`);
  return {
    async claim(principal, action, threadId) {
      let owner = await owners.ownerOf(threadId);
      if (owner === undefined) {
        if (!(await access.allowed(principal, action, { type: 'thread', threadId, owner }))) throw refused(threadId);
        owner = await owners.claim(threadId, principal.id);
        if (owner === principal.id) return owner;
        // Another principal claimed it between our two steps: decide on what is stored now.
      }
      if (!(await access.allowed(principal, action, { type: 'thread', threadId, owner }))) throw refused(threadId);
      return owner;
    },
    async onThread(principal, action, threadId) {
      const owner = await owners.ownerOf(threadId);
      if (owner === undefined) return undefined;
      return (await access.allowed(principal, action, { type: 'thread', threadId, owner })) ? { owner } : undefined;
    },
    onRun(principal, action, run) {
      return access.allowed(principal, action, { type: 'run', ...run });
    },
    async list(principal, url, fallback) {
      const limitParam = url.searchParams.get('limit');
      const after = url.searchParams.get('after') ?? undefined;
      const limit = limitParam === null ? 100 : Number(limitParam);
      if (checkpointer === undefined) {
        const visible: { threadId: string }[] = [];
        for (const threadId of fallback()) {
          const owner = await owners.ownerOf(threadId);
          const resource = { type: 'thread', threadId, owner } as const;
          if (owner !== undefined && (await access.permits(principal, 'list_threads', resource))) {
            visible.push({ threadId });
          }
        }
        return { threads: visible, nextCursor: null };
      }
      // The default rule filters in the store (one indexed query). The anonymous principal also owns the unowned
      // threads, and an `authorize` of yours may allow anything: those pages are filtered here, thread by thread.
      const inStore = access.ownerOnly && owners.stored && principal.id !== ANONYMOUS_PRINCIPAL.id;
      const page = await checkpointer.listThreads({
        ...(limitParam !== null ? { limit } : {}),
        ...(after !== undefined ? { after } : {}),
        ...(inStore ? { owner: principal.id } : {}),
      });
      const nextCursor = page.length > 0 && page.length === limit ? page.at(-1)!.cursor : null;
      if (inStore) return { threads: page, nextCursor };
      const threads: ThreadInfo[] = [];
      for (const info of page) {
        const owner = owners.stored ? (info.owner ?? null) : await owners.ownerOf(info.threadId);
        const resource = { type: 'thread', threadId: info.threadId, owner } as const;
        if (owner !== undefined && (await access.permits(principal, 'list_threads', resource))) threads.push(info);
      }
      return { threads, nextCursor };
    },
  };
}
