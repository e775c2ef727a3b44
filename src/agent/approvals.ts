/**
 * An Agent's approvals: answering the requests a suspended run waits for, storing each answer before anything runs,
 * and the batch a resumed run finishes.
 * @module
 */
import { validateToolArguments } from '../tools/define-tool.js';
import type { ApprovalAnswer } from '../types/approval.js';
import type { ImageContent, TextContent } from '../types/content.js';
import { AgentBusyError, InvalidInputError, InvalidStateError, StaleApprovalError } from '../types/errors.js';
import { toolCallsOf, type AssistantMessage } from '../types/messages.js';
import type { AgentStateStore } from './agent-state.js';
import type { CheckpointSession } from './checkpoint-session.js';
import type { ResumeAnswer, ResumeBatch } from '../loop/resume-batch.js';
import type { StoredRequest } from './stored-extra.js';
import type { InputKeyRecord } from './input-keys.js';

/** What {@link Approvals} works with: the parts of its Agent. */
export interface ApprovalsInit {
  readonly store: AgentStateStore;
  readonly session: CheckpointSession | undefined;
  readonly isBusy: () => boolean;
  /** Restores the thread if it was not (the requests of a suspended run may be in the checkpointer only). */
  readonly restore: () => Promise<void>;
}

/** The approvals of an Agent (see `agent.respond`, `agent.pending`, `agent.abortPending`). */
export class Approvals {
  constructor(private readonly agent: ApprovalsInit) {}

  /**
   * Records `answer` for `requestId` and stores it; resolves with whether it was the batch's last open request (the
   * run can resume). A failure leaves nothing recorded.
   *
   * With `keyed`, its key is refused with `DuplicateInputError` when taken (checked first, once the thread is
   * restored), and stored with the answer in the same write: with its `runId` when the answer completes the batch
   * (that run resumes it), without when it does not.
   */
  async answer(requestId: string, answer: ApprovalAnswer, keyed?: InputKeyRecord): Promise<boolean> {
    await this.ready(keyed?.idempotencyKey);
    const { store, session } = this.agent;
    const approvals = store.approvals!;
    const request = approvals.requests.find((r) => r.requestId === requestId);
    if (request === undefined) throw new StaleApprovalError(requestId, 'unknown');
    if (request.answer !== undefined) throw new StaleApprovalError(requestId, 'answered');
    const checked = await this.checkAnswer(request, answer);
    if (this.agent.isBusy()) throw busy();
    if (request.answer !== undefined) throw new StaleApprovalError(requestId, 'answered'); // answered meanwhile
    if (keyed !== undefined) store.inputs.check(keyed.idempotencyKey); // given meanwhile
    const before = store.approvals;
    const answeredBefore = store.answered;
    store.approvals = {
      ...approvals,
      requests: approvals.requests.map((r) => (r === request ? { ...r, answer: checked } : r)),
    };
    const complete = store.pending.length === 0;
    const record = keyed === undefined ? undefined : complete ? keyed : { idempotencyKey: keyed.idempotencyKey };
    if (record !== undefined) store.addAnswered(record);
    store.changed();
    try {
      await session?.saveNow();
    } catch (error) {
      store.approvals = before; // not stored: not answered
      store.answered = answeredBefore;
      store.changed();
      throw error;
    }
    if (record !== undefined) store.inputs.commit(record.idempotencyKey, record.runId);
    return complete;
  }

  /**
   * Waits for the restore and checks that a run is suspended and none is active — and first, once restored, that
   * `key` (an answer's idempotency key) was not taken (`DuplicateInputError`).
   */
  async ready(key?: string): Promise<void> {
    if (this.agent.isBusy()) throw busy();
    await this.agent.restore();
    if (key !== undefined) this.agent.store.inputs.check(key);
    if (this.agent.store.approvals === undefined) {
      throw new InvalidStateError('No run is suspended: there is no approval request to answer');
    }
  }

  /** Throws {@link InvalidStateError} while requests are unanswered (a run cannot go on past them). */
  checkComplete(method: string): void {
    const open = this.agent.store.pending;
    if (open.length === 0) return;
    throw new InvalidStateError(
      `${method}(): the last run is suspended, waiting for ${open.length} approval(s) ` +
        `(${open.map((r) => r.requestId).join(', ')}); answer them with respond(), or abortPending()`,
    );
  }

  /**
   * The suspended batch with its answers, for the resumed run: the assistant message whose calls were held (the last
   * one of the transcript), each held call's answer (or an abort with `abort`'s reason for every call still without a
   * result), and the messages deferred from the suspended turn.
   */
  batch(abort?: string): ResumeBatch {
    const { store } = this.agent;
    const approvals = store.approvals!;
    const assistant = lastAssistant(store.messages);
    if (assistant === undefined) throw new InvalidStateError('The suspended batch is not in the transcript');
    const answers = new Map<string, ResumeAnswer>();
    const requests = new Map<string, StoredRequest>();
    for (const request of approvals.requests) requests.set(request.toolCallId, request);
    if (abort !== undefined) {
      for (const call of toolCallsOf(assistant)) answers.set(call.id, { abort });
    } else {
      for (const request of approvals.requests) {
        // A request with no answer here was closed at restore (its result is in the transcript already).
        answers.set(request.toolCallId, request.answer ?? { interrupted: true });
      }
    }
    return {
      assistant,
      answers,
      requests,
      ...(abort === undefined ? {} : { abort }),
      ...(approvals.deferred.length === 0 ? {} : { inject: approvals.deferred }),
    };
  }

  /**
   * An answer checked: one of its four forms, edited arguments valid for the tool; `output` only for a client tool's
   * request, and a client tool's request only `output` or `deny` (every call gets exactly one result, the client's).
   */
  private async checkAnswer(request: StoredRequest, answer: ApprovalAnswer): Promise<ApprovalAnswer> {
    const value = answer as Partial<Record<'approve' | 'deny' | 'edit' | 'output', unknown>> | null;
    if (typeof value !== 'object' || value === null) throw malformed();
    const keys = Object.keys(value);
    if ('output' in value) {
      if (request.clientTool !== true) {
        throw new InvalidInputError(
          `${request.requestId} is not a client tool's call (${request.toolName}): answer it with approve, deny or edit, not output`,
        );
      }
      return checkOutput(request, value);
    }
    if (request.clientTool === true && typeof value.deny !== 'string') {
      throw new InvalidInputError(
        `${request.requestId} is a call of the client tool ${request.toolName}: answer it with { output } or { deny }`,
      );
    }
    const remember = (value as { remember?: unknown }).remember;
    if (value.approve === true && keys.length === 2 && remember === 'thread') return { approve: true, remember };
    if (keys.length !== 1) throw malformed();
    if (value.approve === true) return { approve: true };
    if (typeof value.deny === 'string') return { deny: value.deny };
    if (typeof value.edit === 'object' && value.edit !== null && !Array.isArray(value.edit)) {
      const tool = this.agent.store.tools.find((t) => t.name === request.toolName);
      if (tool === undefined) return { edit: value.edit as Record<string, unknown> };
      const validation = await validateToolArguments(tool, value.edit);
      if (!validation.ok) {
        throw new InvalidInputError(`The edited arguments of ${request.requestId} are invalid: ${validation.message}`);
      }
      return { edit: validation.args };
    }
    throw malformed();
  }
}

function malformed(): InvalidInputError {
  return new InvalidInputError(
    "An approval answer is { approve: true, remember?: 'thread' }, { deny: reason }, { edit: args } or, for a client " +
      'tool, { output, isError? }',
  );
}

/** A client tool's output checked: text, or text and image blocks; `isError` a boolean when given. */
function checkOutput(request: StoredRequest, value: Record<string, unknown>): ApprovalAnswer {
  const { output, isError } = value;
  const keys = Object.keys(value).filter((key) => key !== 'output' && key !== 'isError');
  const blocks =
    typeof output === 'string' ||
    (Array.isArray(output) &&
      output.every((block: unknown) => {
        const b = (block ?? {}) as Record<string, unknown>;
        if (b.type === 'text') return typeof b.text === 'string';
        return b.type === 'image' && typeof b.data === 'string' && typeof b.mimeType === 'string';
      }));
  if (!blocks || keys.length > 0 || (isError !== undefined && typeof isError !== 'boolean')) {
    throw new InvalidInputError(
      `The output of ${request.requestId} must be { output: text or text/image blocks, isError?: boolean }`,
    );
  }
  const content =
    typeof output === 'string' ? output : (output as (TextContent | ImageContent)[]).map((block) => ({ ...block }));
  return isError === true ? { output: content, isError: true } : { output: content };
}

function busy(): AgentBusyError {
  return new AgentBusyError('respond(): a run is active; await waitForIdle() first');
}

function lastAssistant(messages: readonly { role: string }[]): AssistantMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === 'assistant') return message as AssistantMessage;
    if (message.role !== 'toolResult') return undefined;
  }
  return undefined;
}
