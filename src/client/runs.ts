/**
 * Starting, cancelling and answering runs on a cubepi server from a client, and reading its threads.
 * @module
 */
import { Observable } from 'rxjs';
import type { ApprovalAnswer, ApprovalRequest } from '../types/approval.js';
import type { Message } from '../types/messages.js';
import type { SequencedEvent } from '../wire/frames.js';
import { fromAgentEvents, serverError, type ClientOptions } from './from-agent-events.js';

/** Options of {@link startRun} and {@link respond}. */
export interface RunClientOptions extends ClientOptions {
  /** `sse` (default) or `websocket` for the run's events. */
  readonly transport?: 'sse' | 'websocket' | undefined;
}

/** A thread as `GET /threads/:id` returns it. */
export interface RemoteThread {
  readonly threadId: string;
  /**
   * The thread's messages — while a run is active, those from before it: replay the run's events from its start
   * (`fromAgentEvents(runEventsUrl(base, activeRunId))` piped into `assembleMessages(messages)`) for the rest, so
   * nothing is shown twice.
   */
  readonly messages: readonly Message[];
  readonly pending: readonly ApprovalRequest[];
  /** The thread's active run, to resume watching it (`fromAgentEvents(runEventsUrl(base, id))`), or `null`. */
  readonly activeRunId: string | null;
}

/**
 * Starts a run on `threadId` at the server `baseUrl` (where its routes live, e.g. `https://app.example.com/api/agent`)
 * with `input` (a string, a message or messages) and streams its events. Cold: subscribing posts the prompt.
 *
 * Unsubscribing before the run ended cancels it on the server (`DELETE /runs/:id`, sent with `keepalive` so it
 * survives a page being closed): the server cancels the run, its provider request is aborted and its tools see their
 * signal. Errors like {@link fromAgentEvents}, and with `AgentServerError` when the server refuses the run (409 when
 * the thread has a run already, 400 for bad input or thread id, 413 for a body over its limit).
 *
 * @example
 * const run = startRun('/api/agent', 'thread-1', 'Hello').pipe(assembleMessages()).subscribe(render);
 * stopButton.onclick = () => run.unsubscribe(); // cancels the run on the server
 */
export function startRun(
  baseUrl: string,
  threadId: string,
  input: string | Message | readonly Message[],
  options: RunClientOptions = {},
): Observable<SequencedEvent> {
  return ownedRun(baseUrl, options, () =>
    post(baseUrl, `threads/${encodeURIComponent(threadId)}/runs`, { input }, options),
  );
}

/** What {@link retryFrom} retries: message `seq` of the thread, and for a user message what to send in its place. */
export interface RetryFromRequest {
  /** The message retried from (its index in the thread): the fork keeps the messages `[0, seq)`. */
  readonly seq: number;
  /** For a user message: the edited content sent instead (default: the same message again). Refused otherwise. */
  readonly input?: string | Message | readonly Message[] | undefined;
}

/** Options of {@link retryFrom}. */
export interface RetryFromClientOptions extends RunClientOptions {
  /** Told the fork's thread id and the run's id as soon as the server made them (before any event). */
  readonly onFork?: ((fork: { readonly runId: string; readonly threadId: string }) => void) | undefined;
}

/**
 * "Retry from here" / "Edit and retry" on the server at `baseUrl` (`POST /threads/:id/retry`): the thread is forked
 * just before message `seq` and the run on the fork is streamed — a user message sent again (or `input` in its place),
 * an assistant message asked of the model again. The original thread is unchanged; `onFork` learns the fork's id.
 * Cold: subscribing posts the retry; unsubscribing before the run ended cancels it, as for {@link startRun}. Errors
 * with `AgentServerError` 400 for a seq that names no message or a tool result, 404 for a thread the caller may not
 * fork.
 *
 * @example
 * retryFrom('/api', 'thread-1', { seq: 2, input: 'Shorter, please' }, { onFork: ({ threadId }) => open(threadId) })
 *   .pipe(assembleMessages()).subscribe(render);
 */
export function retryFrom(
  baseUrl: string,
  threadId: string,
  retry: RetryFromRequest,
  options: RetryFromClientOptions = {},
): Observable<SequencedEvent> {
  return ownedRun(baseUrl, options, async () => {
    const body = retry.input === undefined ? { seq: retry.seq } : { seq: retry.seq, input: retry.input };
    const started = await post(baseUrl, `threads/${encodeURIComponent(threadId)}/retry`, body, options);
    if (started.runId !== null && started.threadId !== undefined) {
      options.onFork?.({ runId: started.runId, threadId: started.threadId });
    }
    return started;
  });
}

/**
 * Continues `threadId` without a new prompt (`agent.resume$` on the server: `POST /threads/:id/runs` with
 * `{"resume": true}`) and streams the run's events: the model answers the history as it is. What a "Continue" button
 * does after a run failed or was lost with its server (`RunLostError`): the answer it never finished is asked for
 * again. Cold and cancelled by unsubscribing, like {@link startRun}. Errors with `AgentServerError` 409 when there is
 * nothing to continue (an empty thread, or one that ends with an answer), 501 from a run-queue server.
 *
 * @example
 * run$.subscribe({ error: (error) => { if (error instanceof RunLostError) continueButton.hidden = false; } });
 * continueButton.onclick = () => resumeThread('/api/agent', 'thread-1').pipe(assembleMessages(history)).subscribe(render);
 */
export function resumeThread(
  baseUrl: string,
  threadId: string,
  options: RunClientOptions = {},
): Observable<SequencedEvent> {
  return ownedRun(baseUrl, options, () =>
    post(baseUrl, `threads/${encodeURIComponent(threadId)}/runs`, { resume: true }, options),
  );
}

/**
 * Answers an approval request of `threadId` (`{ approve: true }`, `{ deny: reason }` or `{ edit: args }`; a client
 * tool's call with `{ output, isError? }`, see docs/approvals.md). When it
 * was the last open request of its batch, the resumed run's events follow (unsubscribing cancels that run, as for
 * {@link startRun}); otherwise it completes with no event. Errors with `AgentServerError` 409 for a stale request.
 */
export function respond(
  baseUrl: string,
  threadId: string,
  requestId: string,
  answer: ApprovalAnswer,
  options: RunClientOptions = {},
): Observable<SequencedEvent> {
  const path = `threads/${encodeURIComponent(threadId)}/approvals/${encodeURIComponent(requestId)}`;
  return ownedRun(baseUrl, options, () => post(baseUrl, path, answer, options));
}

/** Cancels a run on the server (any client may); resolves with whether it was still running. */
export async function cancelRun(baseUrl: string, runId: string, options: ClientOptions = {}): Promise<boolean> {
  const response = await request(baseUrl, `runs/${encodeURIComponent(runId)}`, options, {
    method: 'DELETE',
    keepalive: true,
  });
  return ((await response.json()) as { cancelled: boolean }).cancelled;
}

/** A thread's stored messages, its pending approvals and its active run, if any. */
export async function getThread(baseUrl: string, threadId: string, options: ClientOptions = {}): Promise<RemoteThread> {
  const response = await request(baseUrl, `threads/${encodeURIComponent(threadId)}`, options, {});
  return (await response.json()) as RemoteThread;
}

/** Options of {@link listThreads} and {@link listThreadPage}. */
export type ListThreadsClientOptions = ClientOptions & {
  /** At most this many threads (the server's default: 100). */
  readonly limit?: number | undefined;
  /** The `nextCursor` of the previous page (or a thread's `cursor`): the page after it. */
  readonly after?: string | undefined;
};

/** One page of the server's threads (`GET /threads`: its checkpointer's `listThreads`), newest first. */
export async function listThreads(
  baseUrl: string,
  options: ListThreadsClientOptions = {},
): Promise<readonly RemoteThreadInfo[]> {
  return (await listThreadPage(baseUrl, options)).threads;
}

/**
 * One page of the threads the caller may see, with the cursor of the next: pass `nextCursor` as `after` until it is
 * `null`. Follow the cursor rather than stopping at a short page: with an `authorize` that filters threads one by one,
 * a page can hold fewer than `limit` threads (even none) and still have more after it.
 */
export async function listThreadPage(
  baseUrl: string,
  options: ListThreadsClientOptions = {},
): Promise<{ readonly threads: readonly RemoteThreadInfo[]; readonly nextCursor: string | null }> {
  const query = new URLSearchParams();
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.after !== undefined) query.set('after', options.after);
  const path = query.size === 0 ? 'threads' : `threads?${query.toString()}`;
  const response = await request(baseUrl, path, options, {});
  const body = (await response.json()) as { threads: RemoteThreadInfo[]; nextCursor?: string | null };
  return { threads: body.threads, nextCursor: body.nextCursor ?? null };
}

/** A thread in {@link listThreads}: its id, and with a checkpointer its `ThreadInfo` fields. */
export interface RemoteThreadInfo {
  readonly threadId: string;
  readonly messageCount?: number;
  readonly createdAt?: number;
  readonly updatedAt?: number;
  readonly cursor?: string;
  /** The owner's principal id, for an owned thread (the server lists only threads the caller may see). */
  readonly owner?: string;
}

/**
 * The URL of a run's events on the server at `baseUrl`, for {@link fromAgentEvents}. With `threadId` (the run's
 * thread, as `thread=`), a server restarted mid-run finds the run in that thread's checkpoint and ends the stream with
 * `RunLostError` rather than 404.
 */
export function runEventsUrl(
  baseUrl: string,
  runId: string,
  transport: 'sse' | 'websocket' = 'sse',
  threadId?: string,
): string {
  const url = new URL(`runs/${encodeURIComponent(runId)}/events`, withSlash(absolute(baseUrl)));
  if (threadId !== undefined) url.searchParams.set('thread', threadId);
  if (transport === 'websocket') url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.toString();
}

/** A run started by `begin` (a POST answering `{ runId }`), streamed, and cancelled when left before it ended. */
function ownedRun(
  baseUrl: string,
  options: RunClientOptions,
  begin: () => Promise<{ runId: string | null; threadId?: string }>,
): Observable<SequencedEvent> {
  return new Observable<SequencedEvent>((subscriber) => {
    let left = false;
    let ended = false;
    let runId: string | null = null;
    let inner: { unsubscribe(): void } | undefined;
    begin().then(
      (started) => {
        runId = started.runId;
        if (runId === null) {
          ended = true;
          subscriber.complete();
          return;
        }
        // The POST resolved after the subscriber left: the run started anyway, so cancel it.
        if (left) return void cancelRun(baseUrl, runId, options).catch(() => undefined);
        inner = fromAgentEvents(runEventsUrl(baseUrl, runId, options.transport, started.threadId), options).subscribe({
          next: (event) => subscriber.next(event),
          error: (error: unknown) => {
            ended = true;
            subscriber.error(error);
          },
          complete: () => {
            ended = true;
            subscriber.complete();
          },
        });
      },
      (error: unknown) => {
        ended = true;
        subscriber.error(error);
      },
    );
    return () => {
      left = true;
      inner?.unsubscribe();
      if (!ended && runId !== null) void cancelRun(baseUrl, runId, options).catch(() => undefined);
    };
  });
}

async function post(
  baseUrl: string,
  path: string,
  body: unknown,
  options: ClientOptions,
): Promise<{ runId: string | null; threadId?: string }> {
  const response = await request(baseUrl, path, options, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await response.json()) as { runId: string | null; threadId?: string };
}

async function request(baseUrl: string, path: string, options: ClientOptions, init: RequestInit): Promise<Response> {
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  const headers = new Headers(init.headers);
  if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`);
  const response = await fetchImpl(new URL(path, withSlash(absolute(baseUrl))), { ...init, headers });
  if (!response.ok) throw await serverError(response);
  return response;
}

function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}

/** `baseUrl` made absolute against the page's location in a browser (a relative base such as `/api/agent`). */
function absolute(baseUrl: string): string {
  const location = (globalThis as { location?: { href: string } }).location;
  return location === undefined ? baseUrl : new URL(baseUrl, location.href).toString();
}
