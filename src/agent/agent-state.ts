/**
 * The Agent's state: what it holds between and during runs, the events that change it, and its snapshots.
 * @module
 */
import type { AgentEvent } from '../types/agent-events.js';
import { applyPatch } from '../types/apply-patch.js';
import type { ApprovalRequest } from '../types/approval.js';
import type { AssistantMessage, Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { HookState } from '../types/state.js';
import type { AnyAgentTool } from '../types/tool.js';
import { EventHub } from './event-hub.js';
import { encodeStoredExtra, MAX_ANSWERED_KEYS, type StoredApprovals } from './stored-extra.js';
import { InputKeys, type InputKeyRecord } from './input-keys.js';

/** A snapshot of the agent. Arrays and sets are frozen copies: keep them, they never change. */
export interface AgentState {
  readonly systemPrompt: string;
  readonly model: Model;
  readonly tools: readonly AnyAgentTool[];
  readonly messages: readonly Message[];
  /** A run is active. */
  readonly isStreaming: boolean;
  /** The assistant message being streamed, if any. */
  readonly streamingMessage?: AssistantMessage | undefined;
  /** Ids of the tool calls being handled. */
  readonly pendingToolCalls: ReadonlySet<string>;
  /** Why the last run failed or was cancelled (cleared when a run starts). */
  readonly errorMessage?: string | undefined;
  /** The run state's values (`state.values`; the name is kept from when hooks mutated it). */
  readonly extra: Readonly<Record<string, unknown>>;
  /** The run state (see `docs/state.md`). */
  readonly runState: HookState;
  /** Approval requests a suspended run waits for, unanswered (see `agent.pending`). */
  readonly pendingApprovals: readonly ApprovalRequest[];
}

/** What an {@link AgentStateStore} starts from. */
export interface AgentStateInit {
  readonly systemPrompt: string;
  readonly model: Model;
  readonly tools: readonly AnyAgentTool[];
  readonly messages: Message[];
  readonly state: HookState;
}

/**
 * The mutable state behind `agent.state` and `agent.state$`. Its fields are written by the Agent's parts (the run's
 * lifecycle applies each event, the checkpoint session restores the thread); readers get frozen snapshots, built
 * lazily and at most once per change.
 *
 * The per-delta path (`message_update`, in `AgentRuns.start`) writes `streamingMessage` and `snapshot` and tells
 * {@link changes} itself, with no call in between; every other change goes through {@link apply} or {@link changed}.
 */
export class AgentStateStore {
  /** Tells `state$` subscribers that the state changed (a hub, not a Subject: it is told on every event). */
  readonly changes = new EventHub<void>();

  readonly systemPrompt: string;
  readonly model: Model;
  /** The tools, replaced (never changed in place) by `setTools`; a run reads them at each turn's start. */
  tools: readonly AnyAgentTool[];
  /** The transcript; the loop reads it as a run's history (it never changes it). */
  messages: Message[];
  /** The run state, as the last applied patch left it. */
  hookState: HookState;
  /** The approvals a suspended run waits for (answered ones keep their answer until the batch resumes). */
  approvals: StoredApprovals | undefined;
  /** The idempotency keys taken: those of the history, and of inputs given and not stored yet. */
  readonly inputs = new InputKeys();
  /** The idempotency keys of approval answers, kept with the thread's `extra` (the last `MAX_ANSWERED_KEYS`). */
  answered: readonly InputKeyRecord[] = [];
  /** Approval requests of the run in progress, committed to {@link approvals} when it ends suspended. */
  private tentative: ApprovalRequest[] = [];
  /** The run in progress resumes the suspended batch: its end clears {@link approvals}. */
  resuming = false;
  streamingMessage: AssistantMessage | undefined;
  /** The ids of the tool calls started and not yet ended (an array: usually one or a few, added and removed often). */
  pendingToolCalls: string[] = [];
  errorMessage: string | undefined;
  /** A run is active (set by the run's lifecycle when it starts and ends). */
  isStreaming = false;
  /** The snapshot of the current state, once built (`undefined` after a change). */
  snapshot: AgentState | undefined;
  /** The frozen copy of {@link messages}, shared by snapshots until the transcript changes. */
  messagesSnapshot: readonly Message[] | undefined;

  constructor(init: AgentStateInit) {
    this.systemPrompt = init.systemPrompt;
    this.model = init.model;
    this.tools = init.tools;
    this.messages = init.messages;
    this.hookState = init.state;
    this.inputs.rebuild(init.messages, []);
  }

  /** Keeps `record` (an approval answer's key) with the thread, dropping the oldest beyond `MAX_ANSWERED_KEYS`. */
  addAnswered(record: InputKeyRecord): void {
    const answered = [...this.answered, record];
    this.answered = answered.length > MAX_ANSWERED_KEYS ? answered.slice(-MAX_ANSWERED_KEYS) : answered;
  }

  /** The run state's values (what hooks read as `ctx.extra`). */
  get extra(): Readonly<Record<string, unknown>> {
    return this.hookState.values;
  }

  /** The unanswered approval requests. */
  get pending(): readonly ApprovalRequest[] {
    return this.approvals === undefined ? [] : this.approvals.requests.filter((r) => r.answer === undefined);
  }

  /** The `extra` record a checkpointer keeps for this state and its approvals. */
  storedExtra(): Record<string, unknown> {
    return encodeStoredExtra(this.hookState, this.approvals, this.answered);
  }

  /**
   * Applies what a run changes of the state and the approvals: a patch, an approval request, a run's end (which
   * commits its requests when it suspended). Idempotent, so it can run before the checkpoint sink (which stores what
   * it sees at `turn_end` and `agent_end`) and again with the other events.
   */
  applyRunState(event: AgentEvent): void {
    switch (event.type) {
      case 'state_patched':
        if (event.version !== this.hookState.version + 1) return; // applied already
        this.hookState = applyPatch(this.hookState, event.patch, event.producer, event.eventId);
        break;
      case 'approval_requested':
        if (holdsRequest(this.tentative, event.requestId)) return;
        this.tentative.push(requestOf(event));
        return;
      case 'agent_end': {
        if (event.outcome === 'suspended') {
          if (event.pending === undefined) return; // committed already
          this.approvals = { requests: event.pending.map(requestOf), deferred: event.deferredMessages ?? [] };
        } else if (this.resuming) {
          this.approvals = undefined;
        }
        this.resuming = false;
        this.tentative = [];
        break;
      }
      default:
        return;
    }
    this.changed();
  }

  /** The current state (a snapshot; cheap to read repeatedly). */
  get state(): AgentState {
    return (this.snapshot ??= this.buildSnapshot());
  }

  /** Applies an event to the state. */
  apply(event: AgentEvent): void {
    switch (event.type) {
      case 'agent_start':
        this.errorMessage = undefined;
        break;
      case 'message_start':
        // (`message_update`, the per-delta event, is applied in the run's observer in `AgentRuns.start`, which never
        // calls this.)
        if (event.message.role !== 'assistant') return;
        this.streamingMessage = event.message;
        break;
      case 'message_end': {
        const { message } = event;
        this.messages.push(message);
        this.messagesSnapshot = undefined;
        if (message.role === 'assistant') {
          this.streamingMessage = undefined;
          if (message.stopReason === 'error' || message.stopReason === 'aborted')
            this.errorMessage = message.errorMessage;
          else if (message.stopReason === 'blocked')
            this.errorMessage = `Blocked: ${message.blockReason ?? 'no reason given'}`;
        }
        break;
      }
      case 'tool_execution_start':
        if (!this.pendingToolCalls.includes(event.toolCallId)) this.pendingToolCalls.push(event.toolCallId);
        break;
      case 'tool_execution_end':
        remove(this.pendingToolCalls, event.toolCallId);
        break;
      default:
        return;
    }
    this.changed();
  }

  /** Makes a restored thread the transcript (and its state and approvals, when it has them), then tells subscribers. */
  restore(
    messages: Message[],
    stored:
      | {
          readonly state: HookState;
          readonly approvals: StoredApprovals | undefined;
          readonly answered?: readonly InputKeyRecord[];
        }
      | undefined,
  ): void {
    this.messages = messages;
    this.messagesSnapshot = undefined;
    if (stored !== undefined) {
      this.hookState = stored.state;
      this.approvals = stored.approvals;
    }
    this.answered = stored?.answered ?? [];
    this.inputs.rebuild(messages, this.answered);
    this.changed();
  }

  /** A run ended: nothing streams, no tool call is pending. */
  endRun(): void {
    this.isStreaming = false;
    this.streamingMessage = undefined;
    this.pendingToolCalls = [];
    this.changed();
  }

  /**
   * Clears the transcript, `errorMessage`, the streaming state, pending tool calls and the approvals of a suspended
   * run (they answer calls of the transcript cleared; with a checkpointer, the next restore loads them again) (see
   * `Agent.reset`).
   */
  reset(): void {
    this.messages = [];
    this.answered = [];
    this.inputs.clear();
    this.approvals = undefined;
    this.tentative = [];
    this.resuming = false;
    this.errorMessage = undefined;
    this.streamingMessage = undefined;
    this.pendingToolCalls = [];
    this.messagesSnapshot = undefined;
  }

  /** Drops the snapshot and tells `state$` subscribers. */
  changed(): void {
    this.snapshot = undefined;
    if (this.changes.active) this.changes.emit();
  }

  private buildSnapshot(): AgentState {
    this.messagesSnapshot ??= Object.freeze(this.messages.slice());
    return Object.freeze({
      systemPrompt: this.systemPrompt,
      model: this.model,
      tools: Object.freeze(this.tools.slice()),
      messages: this.messagesSnapshot,
      isStreaming: this.isStreaming,
      ...(this.streamingMessage !== undefined ? { streamingMessage: this.streamingMessage } : {}),
      pendingToolCalls: new FrozenSet(this.pendingToolCalls),
      ...(this.errorMessage !== undefined ? { errorMessage: this.errorMessage } : {}),
      extra: this.hookState.values,
      runState: this.hookState,
      pendingApprovals: Object.freeze(this.pending.slice()),
    });
  }
}

/**
 * Whether `requests` holds one with id `requestId`. A function of its own, not a closure over the event: a closure in
 * `applyRunState` would make every call of it (one per event of every run) allocate the event's context.
 */
function holdsRequest(requests: readonly ApprovalRequest[], requestId: string): boolean {
  for (let i = 0; i < requests.length; i++) if (requests[i]!.requestId === requestId) return true;
  return false;
}

/** An approval request without the event's fields. */
function requestOf(request: ApprovalRequest): ApprovalRequest {
  const { requestId, toolCallId, toolName, args, reason, payload, expiresAt, clientTool } = request;
  return {
    requestId,
    toolCallId,
    toolName,
    args,
    reason,
    ...(payload === undefined ? {} : { payload }),
    ...(expiresAt === undefined ? {} : { expiresAt }),
    ...(clientTool === true ? { clientTool } : {}),
  };
}

/** A Set that refuses changes, for snapshots. */
class FrozenSet<T> extends Set<T> {
  private readonly sealed: boolean;
  constructor(values: Iterable<T>) {
    super(values);
    this.sealed = true;
  }
  override add(value: T): this {
    if (this.sealed) throw new TypeError('AgentState.pendingToolCalls is a snapshot and cannot change');
    return super.add(value);
  }
  override delete(): boolean {
    throw new TypeError('AgentState.pendingToolCalls is a snapshot and cannot change');
  }
  override clear(): void {
    throw new TypeError('AgentState.pendingToolCalls is a snapshot and cannot change');
  }
}

/** Removes `item` from `list` in place (without allocating when it is the last one, the common case). */
function remove<T>(list: T[], item: T): void {
  const index = list.lastIndexOf(item);
  if (index < 0) return;
  if (index === list.length - 1) list.pop();
  else list.splice(index, 1);
}
