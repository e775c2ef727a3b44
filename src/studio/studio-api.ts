/**
 * The `studio-api/` routes of `createStudio` (src/studio/api.ts): threads listed and searched, a thread with its forks
 * and (through the agent server) its live state, the config, and the runs of the trace file. Every route is
 * authenticated and checked per thread, as the agent server's routes are.
 * @module
 */
import type { Checkpointer, ThreadInfo } from '../checkpoint/checkpointer.js';
import type { Access } from '../server/access.js';
import { HttpError, json } from '../server/http.js';
import type { Ownership } from '../server/ownership.js';
import type { HttpAgentServer } from '../server/routes.js';
import { checkThread } from '../server/routes.js';
import type { ApprovalRequest } from '../types/approval.js';
import type { Message } from '../types/messages.js';
import type { Principal } from '../types/principal.js';
import type { StudioConfig, StudioThread, StudioThreadPage, StudioThreadSummary } from './api.js';
import type { TraceReader } from './traces.js';

/** What the routes read. @internal */
export interface StudioApiContext {
  readonly checkpointer: Checkpointer;
  readonly server: HttpAgentServer | undefined;
  readonly traces: TraceReader | undefined;
  readonly access: Access;
  readonly ownership: Ownership;
}

const TITLE_LENGTH = 120;
/** Threads read per store page while searching. */
const SCAN_PAGE = 200;

/** The handler of `studio-api/<rest>`. @internal */
export function studioApi(
  context: StudioApiContext,
): (principal: Principal, request: Request, url: URL, rest: readonly string[]) => Promise<Response> {
  const { checkpointer, server, traces, ownership, access } = context;
  /** First-user-message titles by thread (a title never changes once the thread has one). */
  const titles = new Map<string, string>();

  async function titleOf(threadId: string): Promise<string> {
    const known = titles.get(threadId);
    if (known !== undefined) return known;
    const data = await checkpointer.load(threadId);
    const title = data === null ? '' : titleFrom(data.messages);
    if (title !== '') titles.set(threadId, title);
    return title;
  }

  const summary = async (info: ThreadInfo): Promise<StudioThreadSummary> => ({
    threadId: info.threadId,
    title: await titleOf(info.threadId),
    messageCount: info.messageCount,
    createdAt: info.createdAt,
    updatedAt: info.updatedAt,
    ...(info.parent === undefined ? {} : { parent: { threadId: info.parent.threadId, atSeq: info.parent.atSeq } }),
  });

  /** One store page the principal may see (through the same filter as `GET /threads`). */
  async function visiblePage(principal: Principal, after: string | undefined, limit: number) {
    const query = new URL('http://studio/threads');
    query.searchParams.set('limit', String(limit));
    if (after !== undefined) query.searchParams.set('after', after);
    const page = await ownership.list(principal, query, () => []);
    return { threads: page.threads as readonly ThreadInfo[], next: page.nextCursor };
  }

  async function listThreads(principal: Principal, url: URL): Promise<StudioThreadPage> {
    const limit = positiveInt(url.searchParams.get('limit'), 50, 'limit');
    const q = (url.searchParams.get('q') ?? '').trim().toLowerCase();
    let after = url.searchParams.get('after') ?? undefined;
    const found: StudioThreadSummary[] = [];
    // Without a search, one store page; with one, pages are scanned until `limit` threads matched or the list ended.
    for (;;) {
      const page = await visiblePage(principal, after, q === '' ? limit : SCAN_PAGE);
      for (const info of page.threads) {
        const item = await summary(info);
        if (q === '' || item.threadId.toLowerCase().includes(q) || item.title.toLowerCase().includes(q)) {
          found.push(item);
          if (q !== '' && found.length === limit) {
            return { threads: found, next: info.cursor };
          }
        }
      }
      if (q === '' || page.next === null) return { threads: found, next: page.next };
      after = page.next;
    }
  }

  /** The forks of `threadId` the principal may see, oldest first. */
  async function forksOf(principal: Principal, threadId: string) {
    const forks: { threadId: string; atSeq: number }[] = [];
    let after: string | undefined;
    do {
      const page = await visiblePage(principal, after, SCAN_PAGE);
      for (const info of page.threads) {
        if (info.parent?.threadId === threadId) forks.push({ threadId: info.threadId, atSeq: info.parent.atSeq });
      }
      after = page.next ?? undefined;
    } while (after !== undefined);
    return forks.reverse();
  }

  /** The agent server's view of the thread (its active run, pending approvals, messages up to the run). */
  async function live(request: Request, threadId: string) {
    if (server === undefined) return undefined;
    const target = new URL(`${server.settings.basePath}/threads/${encodeURIComponent(threadId)}`, request.url);
    const response = await server.fetch(new Request(target, { headers: request.headers }));
    if (!response.ok) return undefined;
    return (await response.json()) as {
      messages: Message[];
      pending: ApprovalRequest[];
      activeRunId: string | null;
    };
  }

  async function getThread(principal: Principal, request: Request, threadId: string): Promise<StudioThread> {
    const missing = new HttpError(404, 'unknown_thread', `no thread ${threadId}`);
    if ((await ownership.onThread(principal, 'read_thread', threadId)) === undefined) throw missing;
    const [data, remote, forks, info] = await Promise.all([
      checkpointer.load(threadId),
      live(request, threadId),
      forksOf(principal, threadId),
      parentOf(principal, threadId),
    ]);
    if (data === null) throw missing;
    // While a run is active, the history up to it (the page replays the run's events on top: nothing doubled).
    const messages = remote?.activeRunId != null ? remote.messages : data.messages;
    return {
      threadId,
      seq: messages.length,
      messages,
      extra: data.extra,
      ...(info === undefined ? {} : { parent: info }),
      forks,
      activeRunId: remote?.activeRunId ?? null,
      pending: remote?.pending ?? [],
    };
  }

  /** The thread's parent, from the store's list (a fork's `ThreadInfo.parent`). */
  async function parentOf(principal: Principal, threadId: string) {
    let after: string | undefined;
    do {
      const page = await visiblePage(principal, after, SCAN_PAGE);
      const info = page.threads.find((thread) => thread.threadId === threadId);
      if (info !== undefined) return info.parent;
      after = page.next ?? undefined;
    } while (after !== undefined);
    return undefined;
  }

  return async (principal, request, url, rest) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      throw new HttpError(405, 'method_not_allowed', `${request.method} is not allowed: use GET`, { allow: 'GET' });
    }
    const [head, id, ...more] = rest;
    if (more.length === 0 && head === 'config' && id === undefined) {
      const config: StudioConfig = {
        apiBase: server?.settings.basePath ?? '',
        traces: traces !== undefined,
        live: server !== undefined,
      };
      return json(200, config);
    }
    if (more.length === 0 && head === 'threads') {
      if (id === undefined) return json(200, await listThreads(principal, url));
      return json(200, await getThread(principal, request, checkThread(id)));
    }
    if (more.length === 0 && head === 'runs') {
      if (id === undefined) {
        const threadId = checkThread(url.searchParams.get('thread') ?? '');
        if ((await ownership.onThread(principal, 'read_thread', threadId)) === undefined) {
          throw new HttpError(404, 'unknown_thread', `no thread ${threadId}`);
        }
        return json(200, traces === undefined ? { runs: [] } : await traces.runs(threadId));
      }
      const trace = traces === undefined ? undefined : await traces.run(id);
      const threadId = trace?.run.threadId ?? null;
      const visible =
        trace !== undefined &&
        (threadId === null
          ? // A run of no thread (a bare `agent.prompt`) is the anonymous principal's, as an unowned thread is.
            await access.permits(principal, 'read_thread', { type: 'run', runId: id, threadId: undefined, owner: null })
          : (await ownership.onThread(principal, 'read_thread', threadId)) !== undefined);
      if (!visible) throw new HttpError(404, 'unknown_run', `no run ${id} in the trace file`);
      return json(200, trace);
    }
    throw new HttpError(404, 'not_found', `no studio route ${url.pathname}`);
  };
}

/** The first user message's text, cut to {@link TITLE_LENGTH} characters. */
function titleFrom(messages: readonly Message[]): string {
  const first = messages.find((message) => message.role === 'user');
  if (first === undefined || first.role !== 'user') return '';
  const text =
    typeof first.content === 'string'
      ? first.content
      : first.content.map((block) => (block.type === 'text' ? block.text : '')).join(' ');
  return text.replace(/\s+/g, ' ').trim().slice(0, TITLE_LENGTH);
}

function positiveInt(value: string | null, fallback: number, name: string): number {
  if (value === null || value === '') return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1 || n > 1000) {
    throw new HttpError(400, 'invalid_input', `${name} must be an integer from 1 to 1000, got ${value}`);
  }
  return n;
}
