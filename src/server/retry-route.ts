/**
 * `POST /threads/:id/retry` of `createAgentServer`: "retry from here" and "edit and retry" — the thread forked just
 * before a message, and a run on the fork (what `agent.retryFrom$` does), while the original thread keeps its id,
 * its agent and its history. See docs/ui.md ("The wire protocol").
 * @module
 */
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { retryPrompts } from '../agent/retry-from.js';
import { InvalidStateError } from '../types/errors.js';
import type { Message, UserMessage } from '../types/messages.js';
import type { RunBudget } from '../types/limits.js';
import type { Principal } from '../types/principal.js';
import type { AccessAction } from './access.js';
import { HttpError, json, readJsonBody } from './http.js';
import { withServerRun } from './lost-run.js';
import type { Ownership } from './ownership.js';
import type { RunRegistry } from './run-registry.js';
import type { ServerSettings } from './routes.js';
import { userInput } from './user-input.js';

/** What the retry route needs of its server. @internal */
export interface RetryRouteContext {
  readonly settings: ServerSettings;
  readonly checkpointer: Checkpointer | undefined;
  readonly registry: RunRegistry;
  readonly ownership: Ownership;
  readonly admit: (principal: Principal, action: AccessAction, threadId: string) => Promise<RunBudget | undefined>;
}

/**
 * The handler of `POST /threads/:id/retry` `{ seq, input? }`: message `seq` of the thread is retried on a new fork
 * that keeps the messages `[0, seq)` — a user message is sent again (or `input`, user content only, in its place), an
 * assistant message is asked of the model again (`input` refused) — and answers `201 { runId, threadId }` with the
 * fork's id; watch the run with `GET /runs/:id/events` as any other.
 *
 * The fork is made in the server's checkpointer and run by the fork's own agent, not by moving the thread's agent
 * (as `agent.retryFrom$` would): the original thread stays served under its id, unchanged, so both branches can be
 * read and continued side by side. Checks, in order: `fork_thread` on the thread (404 `unknown_thread` when refused or
 * missing, as for a thread that does not exist), the seq (400 `invalid_input` for one that names no message or a tool
 * result), the limits (429), then the fork is written and claimed (`start_run` on it). 409 `invalid_state` for a
 * server without a checkpointer that forks.
 * @internal
 */
export function retryRoute(
  context: RetryRouteContext,
): (principal: Principal, request: Request, threadId: string) => Promise<Response> {
  const { settings, checkpointer, registry, ownership, admit } = context;
  return async (principal, request, threadId) => {
    const body = (await readJsonBody(request, settings.maxBodyBytes)) as { seq?: unknown; input?: unknown } | null;
    const seq = body?.seq;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
      throw new HttpError(400, 'invalid_input', 'the body must be {"seq": <a message index>, "input"?: …}');
    }
    const edited = body?.input === undefined ? undefined : asList(userInput(body.input, settings.maxFileBytes));
    if (checkpointer?.fork === undefined) {
      throw new InvalidStateError('retry: the server needs a checkpointer that forks (give createAgentServer one)');
    }
    const missing = () => new HttpError(404, 'unknown_thread', `no thread ${threadId}`);
    if ((await ownership.onThread(principal, 'fork_thread', threadId)) === undefined) throw missing();
    const stored = await checkpointer.load(threadId);
    if (stored === null) throw missing();
    // Checked before anything is written: a tool result (or a seq past the end) forks nothing.
    const prompts = retryPrompts(stored.messages, seq, edited);
    const forkId = globalThis.crypto.randomUUID();
    const runId = `run_${globalThis.crypto.randomUUID().replaceAll('-', '')}`;
    const budget = await admit(principal, 'start_run', forkId);
    let owner: string | null;
    try {
      // The fork's agent is made before the fork exists: made after, it would take a fork that ends with a server
      // run's user message (a regenerate) for a run lost by a previous process, and close it.
      await registry.agentFor(forkId, principal);
      await checkpointer.fork(threadId, { atSeq: seq, newThreadId: forkId });
      owner = await ownership.claim(principal, 'start_run', forkId);
    } catch (error) {
      void budget?.release();
      throw error;
    }
    const started = await registry.start(
      forkId,
      principal,
      owner,
      (agent, runOptions) =>
        prompts.length > 0
          ? // Tagged like every server prompt, so a restart mid-run closes the fork's turn (docs/ui.md).
            agent.prompt$(withServerRun(prompts as UserMessage[], runId), { ...runOptions, runId })
          : agent.resume$({ ...runOptions, runId }),
      budget,
    );
    if (started === null) throw new HttpError(500, 'internal', 'the run emitted nothing');
    return json(201, { runId: started, threadId: forkId });
  };
}

function asList(input: string | UserMessage | readonly UserMessage[]): Message[] {
  if (typeof input === 'string') {
    return [{ role: 'user', content: input, timestamp: Date.now() }];
  }
  return Array.isArray(input) ? [...(input as readonly UserMessage[])] : [input as UserMessage];
}
