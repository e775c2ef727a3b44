/**
 * An agent's runs served as MCP tool calls (for `serveMcp`), approvals included: asked of the client by MCP
 * elicitation when it can answer them, otherwise returned with a tool to answer them.
 * @module
 */
import type { Observable } from 'rxjs';
import type { Agent } from '../agent/agent.js';
import type { AgentEndEvent, AgentEvent } from '../types/agent-events.js';
import type { ApprovalAnswer, ApprovalRequest } from '../types/approval.js';
import { errorMessageOf } from '../types/errors.js';
import { textOf, type Message } from '../types/messages.js';
import type { McpContent } from './mcp-content.js';

export type { McpContent } from './mcp-content.js';

/** A `tools/call` result as this server sends it. */
export interface McpCallResult {
  [key: string]: unknown;
  content: McpContent[];
  isError?: boolean;
}

/** What one call of a served tool gets from the connection it came on. */
export interface ServedCall {
  /** Aborts when the client cancels the call or leaves. */
  readonly signal: AbortSignal;
  /** Sends a progress notification (when the client asked for progress). */
  readonly progress: (message: string) => void;
  /** Asks the client to answer an approval request (MCP elicitation); `undefined` when the client cannot. */
  readonly ask: ((request: ApprovalRequest) => Promise<ApprovalAnswer>) | undefined;
  /** The suspended runs of this connection, waiting for `answer_approval`. */
  readonly held: HeldApprovals;
}

/** The name of the tool that answers an approval request, listed to clients that cannot answer elicitations. */
export const ANSWER_TOOL = 'answer_approval';

/** Held requests per connection at most: past this, the oldest one's run is ended (`abortPending`). */
const MAX_HELD = 100;

/** The approval requests of a connection's suspended runs, each with the agent that waits for its answer. */
export class HeldApprovals {
  private readonly agents = new Map<string, Agent>();

  /** Holds the open requests of `agent`'s suspended run. */
  hold(agent: Agent, pending: readonly ApprovalRequest[]): void {
    for (const request of pending) this.agents.set(request.requestId, agent);
    for (const [requestId, oldest] of this.agents) {
      if (this.agents.size <= MAX_HELD) break;
      this.agents.delete(requestId);
      if (![...this.agents.values()].includes(oldest))
        void oldest.abortPending('too many runs waited for approval').catch(() => undefined);
    }
  }

  /** The agent waiting for `requestId`, no longer held for it; `undefined` when none is. */
  take(requestId: string): Agent | undefined {
    const agent = this.agents.get(requestId);
    this.agents.delete(requestId);
    return agent;
  }
}

export const ANSWER_INPUT = {
  type: 'object',
  properties: {
    requestId: { type: 'string', description: 'The id of the approval request' },
    approve: { type: 'boolean', description: 'true runs the call; false refuses it' },
    reason: { type: 'string', description: 'Why it is refused (the agent is told)' },
  },
  required: ['requestId', 'approve'],
  additionalProperties: false,
} as const;

/** The fields of the form an approval is asked with (MCP elicitation: flat, primitive fields). */
const APPROVAL_FORM = {
  type: 'object',
  properties: {
    approve: { type: 'boolean', title: 'Approve', description: 'Run this tool call' },
    reason: { type: 'string', title: 'Reason', description: 'Why not (the agent is told, when you refuse)' },
  },
  required: ['approve'],
} as const;

/** The `elicitation/create` params asking a person about `request`. */
export function approvalElicitation(request: ApprovalRequest): Record<string, unknown> {
  return {
    message: `The agent asks to call ${request.toolName} with ${bounded(request.args)}: ${request.reason}. Approve?`,
    requestedSchema: APPROVAL_FORM,
  };
}

/**
 * The client's elicitation result as an answer. Only an accepted form with `approve: true` approves: a refusal, a
 * decline, a dismissal (`cancel`) or anything malformed denies the call, saying which.
 */
export function answerOfElicitation(result: unknown): ApprovalAnswer {
  const record = (typeof result === 'object' && result !== null ? result : {}) as Record<string, unknown>;
  const content = (typeof record.content === 'object' && record.content !== null ? record.content : {}) as Record<
    string,
    unknown
  >;
  if (record.action === 'accept' && content.approve === true) return { approve: true };
  if (record.action === 'accept' && content.approve === false) {
    const reason = typeof content.reason === 'string' && content.reason.trim() !== '' ? content.reason : undefined;
    return { deny: reason?.slice(0, 1_000) ?? 'Refused by the user' };
  }
  if (record.action === 'decline') return { deny: 'Declined by the user' };
  if (record.action === 'cancel') return { deny: 'The user dismissed the approval request' };
  return { deny: 'The approval was not understood (the client answered neither approve nor refuse)' };
}

/** One call of the agent tool: a run of `agent` for `prompt`, approvals asked or held (see {@link serveRun}). */
export function promptAgent(agent: Agent, args: unknown, call: ServedCall): Promise<McpCallResult> {
  const prompt = (args as { prompt?: unknown } | null)?.prompt;
  if (typeof prompt !== 'string') return Promise.resolve(errorResult('Invalid arguments: `prompt` must be a string'));
  // The run gets the request's signal: a cancelled request cancels the run, which then closes itself and completes.
  return serveRun(agent, agent.prompt$(prompt, { signal: call.signal }), call);
}

/** One call of `answer_approval`: the answer recorded; when it was the last one open, the resumed run's answer. */
export async function answerApproval(args: unknown, call: ServedCall): Promise<McpCallResult> {
  const record = (typeof args === 'object' && args !== null ? args : {}) as Record<string, unknown>;
  const { requestId, approve, reason } = record;
  if (
    typeof requestId !== 'string' ||
    typeof approve !== 'boolean' ||
    !(reason === undefined || typeof reason === 'string')
  )
    return errorResult('Invalid arguments: expected { requestId: string, approve: boolean, reason?: string }');
  const agent = call.held.take(requestId);
  if (agent === undefined)
    return errorResult(
      `No approval request ${requestId} is waiting here (unknown, answered already, or its run ended)`,
    );
  const answer: ApprovalAnswer = approve
    ? { approve: true }
    : { deny: reason?.slice(0, 1_000) || 'Refused by the user' };
  const resumed = await runToEnd(agent.respond$(requestId, answer, { signal: call.signal }), call);
  if ('error' in resumed) return resumed.error;
  if (resumed.end === undefined) {
    // Not the last open request of its batch: the run resumes when the others are answered.
    return { content: [{ type: 'text', text: `Recorded. ${describePending(agent.pending)}` }] };
  }
  return finish(agent, resumed.end, call);
}

/** Runs `events$` to its end; a suspension is answered by elicitation when the client can, or held. */
async function serveRun(agent: Agent, events$: Observable<AgentEvent>, call: ServedCall): Promise<McpCallResult> {
  const ran = await runToEnd(events$, call);
  if ('error' in ran) return ran.error;
  return finish(agent, ran.end, call);
}

async function finish(agent: Agent, first: AgentEndEvent | undefined, call: ServedCall): Promise<McpCallResult> {
  let end = first;
  while (end?.outcome === 'suspended' && call.ask !== undefined) {
    const pending = end.pending ?? [];
    end = undefined;
    for (const request of pending) {
      let answer: ApprovalAnswer;
      try {
        call.progress(`waiting for approval of ${request.toolName}`);
        answer = await call.ask(request);
      } catch (error) {
        // Nobody can answer now: the run is ended, so that the agent is free for the next call.
        await agent.abortPending(`the approval could not be asked: ${errorMessageOf(error)}`).catch(() => undefined);
        return errorResult(
          `The agent asked to call ${request.toolName}, and the approval could not be asked of the client (${errorMessageOf(error)}): the run was ended`,
        );
      }
      call.progress(`${request.toolName} ${'deny' in answer ? 'refused' : 'approved'}`);
      const resumed = await runToEnd(agent.respond$(request.requestId, answer, { signal: call.signal }), call);
      if ('error' in resumed) return resumed.error;
      end = resumed.end ?? end;
    }
  }
  if (end?.outcome === 'suspended') {
    call.held.hold(agent, end.pending ?? []);
    return {
      content: [{ type: 'text', text: describePending(end.pending ?? []) }],
      structuredContent: {
        status: 'awaiting_approval',
        pending: (end.pending ?? []).map(({ requestId, toolName, args, reason }) => ({
          requestId,
          toolName,
          args,
          reason,
        })),
      },
    };
  }
  return agentAnswer(end);
}

function describePending(pending: readonly ApprovalRequest[]): string {
  if (pending.length === 0) return 'No approval is waiting.';
  const lines = pending.map(
    (request) => `- request ${request.requestId}: ${request.toolName} with ${bounded(request.args)}: ${request.reason}`,
  );
  return [
    'The agent waits for approval before it goes on:',
    ...lines,
    `Answer each with the ${ANSWER_TOOL} tool: { "requestId": "…", "approve": true }, or { "requestId": "…", "approve": false, "reason": "…" }.`,
  ].join('\n');
}

/** A run's events until it completes: its `agent_end`, progress sent on the way; a failure as an error result. */
function runToEnd(
  events$: Observable<AgentEvent>,
  call: ServedCall,
): Promise<{ end: AgentEndEvent | undefined } | { error: McpCallResult }> {
  return new Promise((resolve) => {
    let end: AgentEndEvent | undefined;
    // eslint-disable-next-line rxjs-x/no-ignored-subscription
    events$.subscribe({
      next: (event) => {
        if (event.type === 'agent_end') end = event;
        const message = progressMessage(event);
        if (message !== undefined) call.progress(message);
      },
      error: (error: unknown) => resolve({ error: errorResult(`The agent failed: ${errorMessageOf(error)}`) }),
      complete: () => resolve({ end }),
    });
  });
}

function progressMessage(event: AgentEvent): string | undefined {
  switch (event.type) {
    case 'turn_start':
      return `turn ${event.turnIndex + 1}`;
    case 'tool_execution_start':
      return `calling ${event.toolName}`;
    case 'tool_execution_end':
      return `${event.toolName} ${event.isError ? 'failed' : 'done'}`;
    case 'message_end':
      return event.message.role === 'assistant' ? textOf(event.message).slice(0, 1_000) || undefined : undefined;
    default:
      return undefined;
  }
}

function agentAnswer(end: AgentEndEvent | undefined): McpCallResult {
  if (end === undefined) return errorResult('The agent run did not end');
  let last: Message | undefined;
  for (let i = end.messages.length - 1; i >= 0 && last === undefined; i--) {
    if (end.messages[i]!.role === 'assistant') last = end.messages[i];
  }
  if (end.outcome === 'completed' || end.outcome === 'stopped') {
    return { content: [{ type: 'text', text: last === undefined ? '' : textOf(last) }] };
  }
  const why = last?.role === 'assistant' && last.errorMessage !== undefined ? `: ${last.errorMessage}` : '';
  return errorResult(`The agent run ended ${end.outcome}${why}`);
}

function bounded(args: unknown): string {
  const text = JSON.stringify(args) ?? 'undefined';
  return text.length > 1_000 ? `${text.slice(0, 1_000)}…` : text;
}

export function errorResult(text: string): McpCallResult {
  return { content: [{ type: 'text', text }], isError: true };
}
