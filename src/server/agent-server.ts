/**
 * `createAgentServer`: agents served over HTTP, framework-agnostic. The core is a Fetch-style handler (`Request` in,
 * `Response` out: Hono, Next.js route handlers, Deno, Bun, edge runtimes); `cubepi/server`'s `toNodeListener` mounts
 * it on Node's `http`, and `attachWebSocket` adds the same streams over WebSocket. See `docs/ui.md`.
 * @module
 */
import { EMPTY, filter, pipe, tap, type Observable } from 'rxjs';
import type { Agent } from '../agent/agent.js';
import type { RunOptions } from '../agent/agent-options.js';
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { AgentBusyError, ConfigurationError, InvalidStateError, StaleApprovalError } from '../types/errors.js';
import type { ApprovalAnswer } from '../types/approval.js';
import type { Message, UserMessage } from '../types/messages.js';
import type { AnyAgentTool } from '../types/tool.js';
import { clientTool } from '../tools/client-tool.js';
import type { AgentEvent } from '../types/agent-events.js';
import type { Principal } from '../types/principal.js';
import { toAgUiEvents } from '../../operators/to-ag-ui-events.js';
import {
  protocolStreamResponse,
  readAgUiRequest,
  readChatRequest,
  type ChatApprovalAnswer,
  uiMessageStreamResponse,
} from './front-end-protocols.js';
import { FrameReader, ResumeGoneError } from './frame-pump.js';
import { HttpError, json, readJsonBody } from './http.js';
import type { AccessAction } from './access.js';
import { createLimiter, type ServerLimitsOptions } from './limiter.js';
import { MemoryLimitStore } from './memory-limit-store.js';
import { createOwnership } from './ownership.js';
import { RunLog } from './run-log.js';
import { withServerRun } from './lost-run.js';
import { RunRegistry } from './run-registry.js';
import { threadOwners } from './thread-owners.js';
import { userInput } from './user-input.js';
import { retryRoute } from './retry-route.js';
import {
  checkThread,
  corsPolicy,
  createFetchHandler,
  positiveOption,
  resolveServing,
  resumePosition,
  sseStreamResponse,
  type HttpAgentServer,
  type ServerSettings,
  type ServingOptions,
} from './routes.js';

/** Wraps how a run is opened (the AG-UI route adds the client's tools, and reads the run's starting state). */
type RunWrap = (
  open: (agent: Agent, runOptions: RunOptions) => Observable<AgentEvent>,
) => (agent: Agent, runOptions: RunOptions) => Observable<AgentEvent>;

/** Options of {@link createAgentServer}. */
export interface AgentServerOptions extends ServingOptions {
  /**
   * The agent of a thread: called once per thread id (then kept; see `maxAgents`) with the principal of the request
   * that first needs it (the thread's owner, under the default `authorize`). Give it a checkpointer and that
   * `threadId` so the thread survives restarts and eviction. Every run also gets the caller's principal in its run
   * options (`ctx.principal` for hooks and tools).
   */
  readonly agent: (threadId: string, principal: Principal) => Agent | Promise<Agent>;
  /**
   * The agents' checkpointer. Lists threads for `GET /threads` (without it, the threads whose agent is in memory),
   * and makes a restart mid-run recoverable: before a thread's agent is created, a run that a previous process started
   * on it and never ended is closed in the thread (`interrupted` tool results, an `aborted` assistant message), and a
   * resume of that run ends with a `run_lost` frame instead of 404 (docs/ui.md, "Restart mid-run"). Assumes this
   * server is the only process serving its threads (several processes: `createQueueServer`).
   */
  readonly checkpointer?: Checkpointer | undefined;
  /**
   * Text, thinking and tool-argument deltas are merged for the wire over this many milliseconds (default 16; 0 merges
   * what arrives before the next timer fires, at least a millisecond on Node): fewer frames, same characters, same
   * order (`throttleDeltas`).
   */
  readonly flushMs?: number | undefined;
  /** How long a run's frames stay available for a resume after it ended (default 300,000 ms). */
  readonly retentionMs?: number | undefined;
  /**
   * Ended runs kept for resumes at most (default 1,000): when more end within `retentionMs`, the oldest are forgotten
   * first (a resume then gets 404, as after `retentionMs`).
   */
  readonly maxRetainedRuns?: number | undefined;
  /**
   * The frames of ended runs kept for resumes at most, in bytes of their JSON (default 64 MiB), oldest forgotten
   * first; the run that ended last is always kept.
   */
  readonly maxRetainedBytes?: number | undefined;
  /** A run's log bound, in frames (default 100,000): see `RunLogLimits.maxFrames` in docs/ui.md. */
  readonly maxFrames?: number | undefined;
  /** Agents kept in memory; the least recently used idle ones go first (default 1,000). */
  readonly maxAgents?: number | undefined;
  /**
   * Limits and budgets per principal (docs/limits.md): checked before every run starts (429 with `Retry-After` over a
   * limit), and enforced while it runs (a run that reaches its principal's token or dollar budget is cancelled, its
   * sub-agents with it). The counters live in a `MemoryLimitStore` unless `store` says otherwise.
   */
  readonly limits?: ServerLimitsOptions | undefined;
}

/** A running agent server: mount {@link fetch}, or `toNodeListener(server)` on Node. */
export interface AgentServer extends HttpAgentServer {
  /** Stops every live run (unsubscribing: their requests aborted), ends every stream, forgets every run. */
  close(): void;
  /** @internal The registry, for the Node adapters. */
  readonly registry: RunRegistry;
  /** @internal The run stream of `GET /runs/:id/events` (the Node adapter serves it without Fetch objects). */
  readonly openRunStream: (
    runId: string,
    lastEventId: string | null,
    principal: Principal,
    threadHint?: string | null,
  ) => Promise<FrameReader>;
}

/**
 * Serves agents over HTTP: start a run on a thread, stream any run's events as Server-Sent Events (resumable with
 * `Last-Event-ID`), cancel a run, answer approvals, read threads. Each thread has one agent and at most one run at a
 * time. Deltas are coalesced for the wire; every client reads the run's shared log at its own pace, so a slow client
 * never blocks the run or the others.
 *
 * Throws {@link ConfigurationError} for invalid options.
 *
 * @example
 * const server = createAgentServer({
 *   agent: (threadId) => new Agent({ provider, model, tools, checkpointer, threadId }),
 * });
 * http.createServer(toNodeListener(server)).listen(8787, '127.0.0.1');
 */
export function createAgentServer(options: AgentServerOptions): AgentServer {
  const settings = resolveSettings(options);
  const registry = new RunRegistry({
    agent: options.agent,
    flushMs: options.flushMs ?? 16,
    maxFrames: options.maxFrames ?? 100_000,
    retentionMs: options.retentionMs ?? 300_000,
    maxAgents: options.maxAgents ?? 1000,
    maxRetainedRuns: options.maxRetainedRuns ?? 1000,
    maxRetainedBytes: options.maxRetainedBytes ?? 64 * 1_048_576,
    checkpointer: options.checkpointer,
  });
  const limiter = createLimiter(
    'createAgentServer',
    options.limits,
    () => new MemoryLimitStore(),
    (denied) => settings.access.deny(denied),
  );

  /** The principal's budget for a run about to start (429 over a limit); `undefined` without limits. */
  const admit = (principal: Principal, action: AccessAction, threadId: string) =>
    limiter?.admit(principal, globalThis.crypto.randomUUID(), action, threadId) ?? Promise.resolve(undefined);

  const owners = threadOwners(options.checkpointer);
  const ownership = createOwnership(settings.access, owners, options.checkpointer);

  /**
   * A prompt run of `principal` on `threadId`: admitted by the limits first (429 over a limit), then the thread is
   * claimed (so a refused request claims nothing; a claim that fails — another's thread: 404 — frees the run's slot),
   * then started with the run's budget. Resolves with the run id (`null`: the run emitted nothing).
   */
  function startPrompt(
    principal: Principal,
    action: 'start_run' | 'chat' | 'ag_ui',
    threadId: string,
    input: string | UserMessage | readonly UserMessage[],
    wrap: RunWrap = (open) => open,
  ): Promise<string | null> {
    // With a checkpointer, the run's id goes into the thread with its prompt (its metadata, `cubepi:run`), so that a
    // process started after this one dies mid-run knows the run started and never ended (docs/ui.md, "Restart mid-run").
    const runId = `run_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
    // Without a checkpointer nothing survives a restart: the prompt goes in as given.
    const tagged = options.checkpointer === undefined ? input : withServerRun(input, runId);
    return startClaimed(
      principal,
      action,
      threadId,
      wrap((agent, runOptions) => agent.prompt$(tagged, { ...runOptions, runId })),
    );
  }

  /** The run `open` starts on `threadId`, admitted and claimed as {@link startPrompt} says. */
  async function startClaimed(
    principal: Principal,
    action: 'start_run' | 'chat' | 'ag_ui',
    threadId: string,
    open: (agent: Agent, runOptions: RunOptions) => Observable<AgentEvent>,
  ): Promise<string | null> {
    const budget = await admit(principal, action, threadId);
    let owner: string | null;
    try {
      owner = await ownership.claim(principal, action, threadId);
    } catch (error) {
      void budget?.release();
      throw error;
    }
    return registry.start(threadId, principal, owner, open, budget);
  }

  async function startRun(principal: Principal, request: Request, threadId: string): Promise<Response> {
    const body = await readJsonBody(request, settings.maxBodyBytes);
    if (resumeRequested(body)) {
      // "Continue": the thread's history as it is (after a run that failed or was lost, its answer asked again).
      // 409 when there is nothing to continue (an empty thread, or one that ends with an answer).
      const runId = await startClaimed(principal, 'start_run', threadId, (agent, runOptions) =>
        agent.resume$(runOptions),
      );
      return json(201, { runId, threadId });
    }
    // User content only, checked before anything is admitted, claimed or stored (400 otherwise).
    const input = userInput((body as { input?: unknown } | null)?.input, settings.maxFileBytes);
    const runId = await startPrompt(principal, 'start_run', threadId, input);
    return json(201, { runId, threadId });
  }

  /**
   * The AI SDK's `DefaultChatTransport` request; the chat id is the thread. A prompt (the last user message) starts a
   * run; `regenerate-message` retries the thread's last answer (`agent.retryFrom$` from it: the agent moves to the
   * fork, which the chat id names from then on); approval answers (the assistant's `approval-responded` tool parts)
   * are given to the thread's pending requests, and the resumed run is streamed.
   */
  async function chat(principal: Principal, request: Request): Promise<Response> {
    const body = await readJsonBody(request, settings.maxBodyBytes);
    const read = readChatRequest(body, settings.maxFileBytes);
    const threadId = checkThread(read.id);
    let runId: string | null;
    let continues: string | undefined;
    if (read.kind === 'prompt') runId = await startPrompt(principal, 'chat', threadId, read.prompt);
    else if (read.kind === 'regenerate') {
      runId = await startClaimed(principal, 'chat', threadId, (agent, runOptions) =>
        agent.retryFrom$(lastAnswerSeq(agent.state.messages), undefined, runOptions),
      );
    } else {
      const clientCalls = new Set<string>();
      runId = await answerChatApprovals(principal, threadId, read.answers, clientCalls);
      continues = read.messageId;
      if (runId === null) throw new HttpError(500, 'internal', 'the run emitted nothing');
      return uiMessageStreamResponse(registry, runId, true, settings.heartbeatMs, continues, clientCalls);
    }
    if (runId === null) throw new HttpError(500, 'internal', 'the run emitted nothing');
    return uiMessageStreamResponse(registry, runId, true, settings.heartbeatMs, continues);
  }

  /**
   * Gives `answers` to the thread's pending requests, one after the other (answers to requests no longer pending are
   * skipped: a client resending an old answer; so are tool outputs of calls that are no pending client tool's), and
   * resolves with the run the last answer of the batch resumed; the client tool calls answered go into `clientCalls`.
   * 409 `stale_approval` when none of them is pending, `invalid_state` when the batch still has requests open.
   */
  async function answerChatApprovals(
    principal: Principal,
    threadId: string,
    answers: readonly ChatApprovalAnswer[],
    clientCalls: Set<string>,
    wrap: RunWrap = (open) => open,
  ): Promise<string> {
    const firstId = 'requestId' in answers[0]! ? answers[0].requestId : answers[0]!.toolCallId;
    const allowed = await ownership.onThread(principal, 'answer_approval', threadId);
    if (allowed === undefined) throw new StaleApprovalError(firstId, 'unknown');
    let given = 0;
    for (const entry of answers) {
      const runId = await registry.start(
        threadId,
        principal,
        allowed.owner,
        wrap((agent, runOptions) => {
          const request = agent.pending.find((pending) =>
            'requestId' in entry
              ? pending.requestId === entry.requestId
              : pending.clientTool === true && pending.toolCallId === entry.toolCallId,
          );
          if (request === undefined) return EMPTY;
          given += 1;
          if (!('requestId' in entry)) clientCalls.add(entry.toolCallId);
          return agent.respond$(request.requestId, entry.answer, runOptions);
        }),
        await admit(principal, 'answer_approval', threadId),
      );
      if (runId !== null) return runId;
    }
    if (given === 0) throw new StaleApprovalError(firstId, 'unknown');
    throw new HttpError(409, 'invalid_state', 'the approvals were stored, but other requests of the batch are open');
  }

  /**
   * AG-UI's `RunAgentInput` (CopilotKit's `HttpAgent`): the run's AG-UI events; the client leaving cancels it. Its
   * `tools` are client tools of that run; a prompt starts a run, trailing `tool` messages and `resume` entries answer
   * the thread's held calls (as chat answers are) and the resumed run is streamed — without the results of the client
   * tool calls the client answered itself (it has them). The stream opens with a `STATE_SNAPSHOT` of the thread's run
   * state as the run starts.
   */
  async function agUi(principal: Principal, request: Request): Promise<Response> {
    const body = await readJsonBody(request, settings.maxBodyBytes);
    const read = readAgUiRequest(body, settings.maxFileBytes);
    const threadId = checkThread(read.threadId);
    let tools: AnyAgentTool[];
    try {
      tools = read.tools.map((tool) => clientTool(tool));
    } catch (error) {
      if (error instanceof ConfigurationError) throw new HttpError(400, 'invalid_input', error.message);
      throw error;
    }
    // The run's state values as it starts: read at its agent_start, before any of its patches (the run's own events
    // are applied to the agent as they are emitted; the reader below may be behind).
    let initial: Readonly<Record<string, unknown>> = {};
    const withRunTools =
      (open: (agent: Agent, runOptions: RunOptions) => Observable<AgentEvent>) =>
      (agent: Agent, runOptions: RunOptions) =>
        open(agent, tools.length === 0 ? runOptions : { ...runOptions, tools }).pipe(
          tap((event) => {
            if (event.type === 'agent_start') initial = agent.state.extra;
          }),
        );
    const clientCalls = new Set<string>();
    let runId: string | null;
    if (read.kind === 'prompt') {
      runId = await startPrompt(principal, 'ag_ui', threadId, read.prompt, withRunTools);
    } else {
      runId = await answerChatApprovals(principal, threadId, read.answers, clientCalls, withRunTools);
    }
    if (runId === null) throw new HttpError(500, 'internal', 'the run emitted nothing');
    const reading = { cancelOnLeave: true, heartbeatMs: settings.heartbeatMs };
    const events = pipe(
      toAgUiEvents({ threadId, state: () => initial }),
      filter((event) => event.type !== 'TOOL_CALL_RESULT' || !clientCalls.has(event.toolCallId as string)),
    );
    return protocolStreamResponse(registry, runId, reading, events);
  }

  /**
   * `useChat({ resume: true })` after a reload: the active run's UI message stream from its start, else 204 (also
   * for a run lost with a previous process: its thread is closed first, and holds the run's stored messages).
   */
  async function resumeChat(principal: Principal, threadId: string): Promise<Response> {
    // A thread the caller may not read answers as one with no active run.
    if ((await ownership.onThread(principal, 'read_thread', threadId)) === undefined) {
      return new Response(null, { status: 204 });
    }
    // Opening the thread closes a run a previous process lost on it: the chat then reloads a well-formed thread.
    await registry.agentFor(threadId, principal);
    const active = registry.activeRun(threadId);
    if (active === undefined) return new Response(null, { status: 204 });
    return uiMessageStreamResponse(registry, active.runId, false, settings.heartbeatMs);
  }

  async function answerApproval(
    principal: Principal,
    request: Request,
    threadId: string,
    requestId: string,
  ): Promise<Response> {
    const answer = (await readJsonBody(request, settings.maxBodyBytes)) as ApprovalAnswer;
    // A thread the caller may not answer on is answered as one without that request (nothing is applied).
    const allowed = await ownership.onThread(principal, 'answer_approval', threadId);
    if (allowed === undefined) throw new StaleApprovalError(requestId, 'unknown');
    let answered: Agent | undefined;
    try {
      const runId = await registry.start(
        threadId,
        principal,
        allowed.owner,
        (agent, runOptions) => {
          answered = agent;
          return agent.respond$(requestId, answer, runOptions);
        },
        await admit(principal, 'answer_approval', threadId),
      );
      return json(200, { runId, threadId });
    } catch (error) {
      // No suspended run: the request was answered (its run resumed) or never existed. The queue server says so with
      // `stale_approval`; so does this one, one code on both (docs/approvals.md).
      if (error instanceof InvalidStateError && answered !== undefined && answered.pending.length === 0) {
        throw new StaleApprovalError(requestId, 'unknown');
      }
      throw error;
    }
  }

  async function getThread(principal: Principal, threadId: string): Promise<Response> {
    // A thread the caller may not read answers exactly as one that does not exist: empty, nothing active.
    if ((await ownership.onThread(principal, 'read_thread', threadId)) === undefined) {
      return json(200, { threadId, messages: [], pending: [], activeRunId: null });
    }
    const agent = await registry.agentFor(threadId, principal);
    // A run that has started but not emitted yet makes restore() busy: the thread is restored by then anyway.
    if (registry.activeRun(threadId) === undefined) {
      await agent.restore().catch((error: unknown) => {
        if (!(error instanceof AgentBusyError)) throw error;
      });
    }
    // Read together, synchronously: the history up to the active run; the run's own messages come from its events.
    const active = registry.activeRun(threadId);
    const messages = agent.state.messages;
    return json(200, {
      threadId,
      messages: active === undefined ? messages : messages.slice(0, active.baseCount),
      pending: agent.pending,
      activeRunId: active?.runId ?? null,
    });
  }

  async function listThreads(principal: Principal, url: URL): Promise<Response> {
    return json(200, await ownership.list(principal, url, () => registry.cachedThreads()));
  }

  async function cancelRun(principal: Principal, runId: string): Promise<Response> {
    const run = registry.runInfo(runId);
    if (run === undefined || !(await ownership.onRun(principal, 'cancel_run', run))) {
      throw new HttpError(404, 'unknown_run', `no run ${runId}`);
    }
    return json(202, { runId, cancelled: registry.cancel(runId) });
  }

  /**
   * A reader of the run's frames after `Last-Event-ID` (or `?after=`) for `principal`: 404 for an unknown run or one
   * it may not watch (the same answer), 410 when gone. A run this process does not have, which its thread (found
   * when the thread was opened, or `threadHint`: the `thread` query parameter) shows started and never ended, is
   * answered with one `lost` frame: the run's stored messages.
   */
  async function openRunStream(
    runId: string,
    lastEventId: string | null,
    principal: Principal,
    threadHint?: string | null,
  ): Promise<FrameReader> {
    const run = registry.runInfo(runId);
    if (run === undefined) {
      const after = resumePosition(lastEventId);
      const hint = threadHint === null || threadHint === undefined ? undefined : checkThread(threadHint);
      if (hint === undefined || (await ownership.onThread(principal, 'read_thread', hint)) !== undefined) {
        const lost = await registry.lostRun(runId, hint, principal);
        if (lost !== undefined && (await ownership.onThread(principal, 'read_thread', lost.threadId)) !== undefined) {
          const log = new RunLog(runId, lost.threadId, { maxFrames: 2 });
          // One past what the client saw, so a client that read part of the run still takes it.
          log.append({ kind: 'lost', seq: after + 1, runId, threadId: lost.threadId, messages: lost.messages });
          return new FrameReader(log, after, settings.heartbeatMs);
        }
      }
    }
    if (run === undefined || !(await ownership.onRun(principal, 'watch_run', run))) {
      throw new HttpError(404, 'unknown_run', `no run ${runId} (unknown, or ended too long ago)`);
    }
    const log = registry.log(runId);
    if (log === undefined) throw new HttpError(404, 'unknown_run', `no run ${runId} (unknown, or ended too long ago)`);
    const after = resumePosition(lastEventId);
    try {
      return new FrameReader(log, after, settings.heartbeatMs);
    } catch (error) {
      if (error instanceof ResumeGoneError) throw new HttpError(410, 'resume_gone', error.message);
      throw error;
    }
  }

  async function streamRun(principal: Principal, request: Request, url: URL, runId: string): Promise<Response> {
    return sseStreamResponse(
      await openRunStream(
        runId,
        request.headers.get('last-event-id') ?? url.searchParams.get('after'),
        principal,
        url.searchParams.get('thread'),
      ),
    );
  }

  const retryFrom = retryRoute({ settings, checkpointer: options.checkpointer, registry, ownership, admit });

  const corsFor = corsPolicy(options);
  const fetchHandler = createFetchHandler(settings, corsFor, {
    retryFrom,
    startRun,
    answerApproval,
    getThread,
    listThreads,
    cancelRun,
    streamRun,
    chat,
    resumeChat,
    agUi,
  });

  return {
    fetch: fetchHandler,
    close: () => registry.close(),
    metrics: () => settings.access.metrics(),
    registry,
    settings,
    openRunStream,
    corsFor,
  };
}

/**
 * The message a regenerate retries from: the first message after the thread's last user message (the answer to it,
 * asked again), or that user message itself when nothing answered it yet (it is sent again). `InvalidStateError`
 * (409) for a thread with no user message.
 */
function lastAnswerSeq(messages: readonly Message[]): number {
  const user = messages.findLastIndex((message) => message.role === 'user');
  if (user === -1) throw new InvalidStateError('regenerate: the thread has no user message to answer again');
  return user + 1 < messages.length ? user + 1 : user;
}

/**
 * Whether a `POST /threads/:id/runs` body asks to continue the thread (`{"resume": true}`, no `input`); 400 for a body
 * with both, or with a `resume` that is not `true`.
 */
function resumeRequested(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || !('resume' in body)) return false;
  if (body.resume !== true) {
    throw new HttpError(400, 'invalid_input', '`resume` must be true (or absent)');
  }
  if ((body as { input?: unknown }).input !== undefined) {
    throw new HttpError(400, 'invalid_input', 'the body is either {"input": …} or {"resume": true}, not both');
  }
  return true;
}

function resolveSettings(options: AgentServerOptions): ServerSettings {
  if (typeof options !== 'object' || options === null || typeof options.agent !== 'function') {
    throw new ConfigurationError('createAgentServer: `agent` must be a function (threadId, principal) => Agent');
  }
  positiveOption('createAgentServer', 'flushMs', options.flushMs, 0);
  positiveOption('createAgentServer', 'retentionMs', options.retentionMs, 0);
  positiveOption('createAgentServer', 'maxFrames', options.maxFrames, 2);
  positiveOption('createAgentServer', 'maxAgents', options.maxAgents, 1);
  positiveOption('createAgentServer', 'maxRetainedRuns', options.maxRetainedRuns, 1);
  positiveOption('createAgentServer', 'maxRetainedBytes', options.maxRetainedBytes, 1);
  return resolveServing('createAgentServer', options);
}
