/**
 * The state machine behind `traceAgent` and `traceEvents`: agent events in, OpenTelemetry spans and metrics out.
 * @module
 */
import {
  context,
  diag,
  metrics,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Meter,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { hashInput } from '../middleware/hash-input.js';
import type {
  AgentEndEvent,
  AgentEvent,
  ModelAttemptEvent,
  ToolExecutionEndEvent,
  ParentRun,
  ToolExecutionStartEvent,
} from '../types/agent-events.js';
import type { AssistantMessage, Message } from '../types/messages.js';
import type { MiddlewareChain } from '../types/middleware-chain.js';
import {
  ATTR,
  finishReasons,
  OTHER_ERROR,
  providerName,
  reasoningAttributes,
  semconvMessage,
  assistantMessage,
  usageAttributes,
} from './gen-ai-attributes.js';
import { chainAttributes } from './chain-attributes.js';
import { createInstruments, type GenAiInstruments } from './gen-ai-metrics.js';
import {
  closeRunContext,
  closeToolCall,
  openRunContext,
  openToolCall,
  runContext,
  toolCallContext,
} from './tool-call-context.js';
import type { ContentRedactor, TracingOptions } from './tracing-options.js';
import { CUBEPI_VERSION } from './version.js';

/** A model attempt's `chat` span. */
interface AttemptTrace {
  readonly span: Span;
  readonly invocationId: string;
  readonly provider: string;
  readonly model: string;
  /** `performance.now()` when the request was announced. */
  readonly startedAt: number;
  firstChunk: boolean;
}

/** A turn's span, and the model attempt in flight in it. */
interface TurnTrace {
  readonly span: Span;
  readonly context: Context;
  readonly index: number;
  attempt: AttemptTrace | undefined;
  /** The messages this turn's model call adds to the conversation (prompt, steering, tool results). */
  inputs: readonly Message[];
  /** `provider/model` of the attempt before a `model_fallback`, for the next attempt's span. */
  fallbackFrom: string | undefined;
}

/** An `execute_tool` span. */
interface ToolTrace {
  readonly span: Span;
  readonly context: Context;
  /** Held for approval: the run suspends with this call pending. */
  pending: boolean;
}

/** A run's `invoke_agent` span and what is open inside it. */
interface RunTrace {
  readonly span: Span;
  readonly context: Context;
  turn: TurnTrace | undefined;
  readonly tools: Map<string, ToolTrace>;
  /** Messages that entered the transcript since the last model call: the next call's inputs. */
  inputs: Message[];
  /** Whether the run span has its request attributes (set at the first model attempt). */
  requested: boolean;
  /** Where this run's metrics go. */
  readonly instruments: GenAiInstruments | undefined;
  lastAssistant: AssistantMessage | undefined;
  /** A compaction in flight: its span, and the invocation whose attempts are its own (not the turn's call). */
  compaction: { readonly span: Span; readonly invocationId: string } | undefined;
  /** The declared versions of the run's middlewares (from `agent_start.middleware`), by name. */
  readonly versions: ReadonlyMap<string, string> | undefined;
}

/** How a recorder stops: the source ended, was unsubscribed, failed, or the tracer was detached. */
export type CloseReason = 'completed' | 'cancelled' | 'failed' | 'detached';

/**
 * Turns the events of any number of runs (told apart by `runId`) into spans: `invoke_agent` per run, a `turn` span
 * per turn, `chat {model}` per model attempt, `execute_tool {name}` per tool call. Never throws: a failure of the
 * tracer, an exporter or a redactor is reported to OpenTelemetry's `diag` logger and the event is skipped.
 */
export class SpanRecorder {
  private readonly tracer: Tracer;
  /** The instruments of `options.meter`; without one, of the global meter, looked up at each run's start. */
  private readonly ownInstruments: GenAiInstruments | undefined;
  private globalMeter: Meter | undefined;
  private globalInstruments: GenAiInstruments | undefined;
  private readonly recordContent: boolean;
  private readonly redact: ContentRedactor | undefined;
  private readonly parent: Context | undefined;
  private readonly agentName: string | undefined;
  private readonly threadId: string | undefined;
  private readonly runs = new Map<string, RunTrace>();
  private readonly usesGlobalMeter: boolean;

  constructor(options: TracingOptions) {
    this.tracer = options.tracer ?? trace.getTracer('cubepi', CUBEPI_VERSION);
    const { meter } = options;
    this.ownInstruments = meter === undefined ? undefined : guarded(() => createInstruments(meter));
    this.usesGlobalMeter = meter === undefined;
    this.recordContent = options.recordContent === true;
    this.redact = options.redact;
    this.parent = options.parent;
    this.agentName = options.agentName;
    this.threadId = options.threadId;
  }

  /** Records one event. */
  record(event: AgentEvent): void {
    // The per-delta event first, and nothing to do for it: the stream's chunks are not spans.
    if (event.type === 'message_update') return;
    try {
      this.handle(event);
    } catch (error) {
      diag.error(`cubepi tracing: recording a ${event.type} event failed`, error);
    }
  }

  /** Ends every span still open (the source ended without `agent_end`, or the tracer is detached). */
  close(reason: CloseReason, error?: unknown): void {
    for (const [runId, run] of this.runs) {
      this.runs.delete(runId);
      closeRunContext(runId, run.context);
      try {
        // Unsubscribed: the run was cancelled. Completed without agent_end, or detached: how it ends is unknown.
        this.endRun(run, reason === 'cancelled' || reason === 'failed' ? reason : undefined, error);
      } catch (failure) {
        diag.error('cubepi tracing: ending the spans of a run failed', failure);
      }
    }
  }

  private handle(event: Exclude<AgentEvent, { type: 'message_update' }>): void {
    if (event.type === 'agent_start') return this.startRun(event.runId, event.parent, event.middleware);
    const run = this.runs.get(event.runId);
    if (run === undefined) return; // a run that started before the tracer was attached
    switch (event.type) {
      case 'turn_start': {
        if (run.turn !== undefined) this.endTurn(run, run.turn);
        const span = this.tracer.startSpan(
          `turn ${event.turnIndex}`,
          {
            kind: SpanKind.INTERNAL,
            // In a thread that can hand off, the turn names the agent active for it.
            attributes:
              event.agent === undefined
                ? { [ATTR.runId]: event.runId, [ATTR.turnIndex]: event.turnIndex }
                : { [ATTR.runId]: event.runId, [ATTR.turnIndex]: event.turnIndex, [ATTR.agentName]: event.agent },
          },
          run.context,
        );
        run.turn = {
          span,
          context: trace.setSpan(run.context, span),
          index: event.turnIndex,
          attempt: undefined,
          inputs: [],
          fallbackFrom: undefined,
        };
        return;
      }
      case 'message_start':
        if (event.message.role === 'assistant') this.firstChunk(run, event.message);
        return;
      case 'message_end':
        if (event.message.role === 'assistant') this.endResponse(run, event.message);
        else run.inputs.push(event.message);
        return;
      case 'model_attempt':
        if (run.compaction?.invocationId === event.invocationId) {
          run.compaction.span.addEvent('model_attempt', {
            [ATTR.attempt]: event.attempt,
            [ATTR.attemptId]: event.attemptId,
          });
          return;
        }
        return this.startAttempt(run, event);
      case 'compaction_start': {
        const span = this.tracer.startSpan(
          'compaction',
          {
            kind: SpanKind.INTERNAL,
            attributes: {
              [ATTR.runId]: event.runId,
              [ATTR.middleware]: event.middleware,
              ...versionOf(run, event.middleware),
              [ATTR.invocationId]: event.invocationId,
              [ATTR.compactionReason]: event.reason,
              [ATTR.compactionThroughSeq]: event.throughSeq,
            },
          },
          (run.turn ?? run).context,
        );
        run.compaction = { span, invocationId: event.invocationId };
        return;
      }
      case 'compaction_end': {
        const compaction = run.compaction;
        if (compaction === undefined) return;
        run.compaction = undefined;
        compaction.span.setAttribute(ATTR.compactionOutcome, event.outcome);
        if (event.usage !== undefined) compaction.span.setAttributes(usageAttributes(event.usage));
        if (event.outcome === 'failed') failed(compaction.span, undefined, event.error);
        compaction.span.end();
        return;
      }
      case 'handoff':
        run.span.addEvent('handoff', {
          [ATTR.handoffFrom]: event.from,
          [ATTR.handoffTo]: event.to,
          [ATTR.toolCallId]: event.toolCallId,
          [ATTR.toolName]: event.toolName,
          [ATTR.turnIndex]: event.turnIndex,
        });
        return;
      case 'context_trimmed':
        (run.turn ?? run).span.addEvent('context_trimmed', {
          [ATTR.middleware]: event.middleware,
          ...versionOf(run, event.middleware),
          [ATTR.contextDropped]: event.dropped,
          [ATTR.contextBudget]: event.budget,
        });
        return;
      case 'guardrail_tripped': {
        const tool = event.toolCallId === undefined ? undefined : run.tools.get(event.toolCallId);
        const span = tool?.span ?? (run.turn ?? run).span;
        const attributes: Attributes = {
          'cubepi.guardrail.name': event.guardrail,
          'cubepi.guardrail.kind': event.kind,
          'cubepi.guardrail.action': event.action,
        };
        this.addContent(attributes, span, 'cubepi.guardrail.reason', () => event.reason);
        span.addEvent('guardrail_tripped', attributes);
        return;
      }
      case 'model_fallback':
        if (run.turn !== undefined) run.turn.fallbackFrom = `${event.from.provider}/${event.from.model}`;
        return;
      case 'tool_execution_start':
        return this.startTool(run, event);
      case 'tool_execution_update':
        return;
      case 'tool_execution_end':
        return this.endTool(run, event);
      case 'approval_requested': {
        const tool = run.tools.get(event.toolCallId);
        if (tool !== undefined) tool.pending = true;
        const span = tool?.span ?? (run.turn ?? run).span;
        const attributes: Attributes = { [ATTR.approvalRequestId]: event.requestId, [ATTR.toolName]: event.toolName };
        span.setAttribute(ATTR.approvalRequestId, event.requestId);
        this.addContent(attributes, span, ATTR.approvalReason, () => event.reason);
        span.addEvent('approval_requested', attributes);
        return;
      }
      case 'hook_error': {
        const span = (run.turn ?? run).span;
        const attributes: Attributes = {
          [ATTR.middleware]: event.middleware,
          ...versionOf(run, event.middleware),
          [ATTR.hook]: event.hook,
        };
        if (event.attempt !== undefined) attributes[ATTR.hookAttempt] = event.attempt;
        if (event.invocationId !== undefined) attributes[ATTR.hookInvocationId] = event.invocationId;
        this.addContent(attributes, span, ATTR.exceptionMessage, () => event.error);
        span.addEvent('hook_error', attributes);
        return;
      }
      case 'state_patched':
        (run.turn ?? run).span.addEvent('state_patched', {
          [ATTR.stateProducer]: event.producer,
          [ATTR.stateVersion]: event.version,
        });
        return;
      case 'turn_end':
        if (run.turn !== undefined) {
          const turn = run.turn;
          run.turn = undefined;
          turn.span.setAttribute(ATTR.stopReason, event.message.stopReason);
          if (event.message.stopReason === 'error')
            failed(turn.span, event.message.errorKind, event.message.errorMessage);
          this.endTurn(run, turn);
        }
        return;
      case 'agent_end':
        this.runs.delete(event.runId);
        closeRunContext(event.runId, run.context);
        return this.endRun(run, event.outcome, undefined, event);
    }
  }

  private startRun(runId: string, parentRun: ParentRun | undefined, chain: MiddlewareChain | undefined): void {
    // A run started by a tool call that says so (`agent_start.parent`, as `agentTool` does) is a child of that call's
    // span when the call is traced: no context manager and no `parent` option needed. A run a hook started (a parent
    // run, no tool call) is a child of that run's invoke_agent span.
    const parent =
      this.parent ??
      (parentRun === undefined
        ? undefined
        : parentRun.toolCallId !== undefined
          ? toolCallContext(parentRun.toolCallId)
          : runContext(parentRun.runId)) ??
      context.active();
    const attributes: Attributes = { [ATTR.operationName]: 'invoke_agent', [ATTR.runId]: runId };
    if (this.agentName !== undefined) attributes[ATTR.agentName] = this.agentName;
    if (this.threadId !== undefined) {
      attributes[ATTR.threadId] = this.threadId;
      attributes[ATTR.conversationId] = this.threadId;
    }
    const told = chain === undefined ? undefined : chainAttributes(chain);
    if (told !== undefined) attributes[ATTR.middlewareChain] = told.text;
    const name = this.agentName === undefined ? 'invoke_agent' : `invoke_agent ${this.agentName}`;
    const span = this.tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, parent);
    const runCtx = trace.setSpan(parent, span);
    openRunContext(runId, runCtx);
    this.runs.set(runId, {
      span,
      context: runCtx,
      turn: undefined,
      tools: new Map(),
      inputs: [],
      requested: false,
      instruments: this.instruments(),
      lastAssistant: undefined,
      compaction: undefined,
      versions: told?.versions,
    });
  }

  /**
   * The instruments for a run starting now. The API has no proxy meter (unlike its proxy tracer): a meter taken before
   * the SDK registered its provider would stay a no-op, so the global meter is looked up at every run's start.
   */
  private instruments(): GenAiInstruments | undefined {
    if (!this.usesGlobalMeter) return this.ownInstruments;
    const meter = metrics.getMeter('cubepi', CUBEPI_VERSION);
    if (meter !== this.globalMeter) {
      this.globalMeter = meter;
      this.globalInstruments = guarded(() => createInstruments(meter));
    }
    return this.globalInstruments;
  }

  private startAttempt(run: RunTrace, event: ModelAttemptEvent): void {
    const turn = run.turn;
    if (turn === undefined) return;
    const previous = turn.attempt;
    if (previous !== undefined) {
      // Another attempt of the same call: the one before it failed (a retry, a fallback), its error on the event.
      turn.attempt = undefined;
      failed(previous.span, event.previous?.errorKind, event.previous?.error);
      this.endAttempt(run, previous, event.previous?.errorKind ?? OTHER_ERROR, undefined);
    } else {
      // The first attempt of this turn's call: the messages since the previous call are its new inputs.
      turn.inputs = run.inputs;
      run.inputs = [];
    }
    const provider = providerName(event.provider);
    const attributes: Attributes = {
      [ATTR.operationName]: 'chat',
      [ATTR.providerName]: provider,
      [ATTR.requestModel]: event.model,
      [ATTR.runId]: event.runId,
      [ATTR.turnIndex]: event.turnIndex,
      [ATTR.invocationId]: event.invocationId,
      [ATTR.attemptId]: event.attemptId,
      [ATTR.attempt]: event.attempt,
    };
    if (turn.fallbackFrom !== undefined) {
      attributes[ATTR.fallbackFrom] = turn.fallbackFrom;
      turn.fallbackFrom = undefined;
    }
    if (event.reasoning !== undefined) Object.assign(attributes, reasoningAttributes(event.reasoning));
    const prompts = turn.inputs.filter((m) => m.role === 'user');
    const hash = prompts.length === 0 ? undefined : hashInput(prompts.map((m) => m.content));
    if (hash !== undefined) attributes[ATTR.promptHash] = hash;
    const span = this.tracer.startSpan(`chat ${event.model}`, { kind: SpanKind.CLIENT, attributes }, turn.context);
    const content: Attributes = {};
    this.addContent(content, span, ATTR.inputMessages, () => turn.inputs.map(semconvMessage));
    span.setAttributes(content);
    turn.attempt = {
      span,
      invocationId: event.invocationId,
      provider,
      model: event.model,
      startedAt: performance.now(),
      firstChunk: false,
    };
    if (!run.requested) {
      // The run's request attributes: the first call's model, and the prompt that started it.
      run.requested = true;
      const runAttributes: Attributes = { [ATTR.providerName]: provider, [ATTR.requestModel]: event.model };
      if (hash !== undefined) runAttributes[ATTR.promptHash] = hash;
      this.addContent(runAttributes, run.span, ATTR.inputMessages, () => turn.inputs.map(semconvMessage));
      run.span.setAttributes(runAttributes);
    }
  }

  /** The assistant message started: the first chunk of the attempt in flight (unless it is already its error). */
  private firstChunk(run: RunTrace, message: AssistantMessage): void {
    const attempt = run.turn?.attempt;
    if (attempt === undefined || attempt.firstChunk || message.stopReason === 'error') return;
    if (message.stopReason === 'aborted') return;
    attempt.firstChunk = true;
    const seconds = (performance.now() - attempt.startedAt) / 1000;
    attempt.span.setAttribute(ATTR.timeToFirstChunk, Math.round(seconds * 1e6) / 1e3);
    run.instruments?.timeToFirstChunk.record(seconds, metricAttributes(attempt, undefined, undefined));
  }

  /** The model call's final message: it ends the attempt in flight (none for a replaced or closing message). */
  private endResponse(run: RunTrace, message: AssistantMessage): void {
    run.lastAssistant = message;
    const turn = run.turn;
    const attempt = turn?.attempt;
    if (turn === undefined || attempt === undefined) return;
    turn.attempt = undefined;
    const { span } = attempt;
    const attributes: Attributes = {
      [ATTR.responseModel]: message.model,
      [ATTR.stopReason]: message.stopReason,
      ...usageAttributes(message.usage),
    };
    if (message.responseId !== undefined) attributes[ATTR.responseId] = message.responseId;
    const reasons = finishReasons(message.stopReason);
    if (reasons !== undefined) attributes[ATTR.finishReasons] = reasons;
    this.addContent(attributes, span, ATTR.outputMessages, () => [assistantMessage(message)]);
    span.setAttributes(attributes);
    const errorType = message.stopReason === 'error' ? (message.errorKind ?? OTHER_ERROR) : undefined;
    if (errorType !== undefined) failed(span, message.errorKind, message.errorMessage);
    this.endAttempt(run, attempt, errorType, message);
  }

  /** Ends an attempt's span and records its metrics. */
  private endAttempt(
    run: RunTrace,
    attempt: AttemptTrace,
    errorType: string | undefined,
    message: AssistantMessage | undefined,
  ): void {
    const seconds = (performance.now() - attempt.startedAt) / 1000;
    attempt.span.end();
    const instruments = run.instruments;
    if (instruments === undefined) return;
    const attributes = metricAttributes(attempt, message?.model, errorType);
    instruments.duration.record(seconds, attributes);
    if (message !== undefined && message.stopReason !== 'aborted') {
      const { usage } = message;
      instruments.tokens.record(usage.input + usage.cacheRead + usage.cacheWrite, {
        ...attributes,
        [ATTR.tokenType]: 'input',
      });
      instruments.tokens.record(usage.output, { ...attributes, [ATTR.tokenType]: 'output' });
    }
  }

  private startTool(run: RunTrace, event: ToolExecutionStartEvent): void {
    const parent = run.turn?.context ?? run.context;
    const attributes: Attributes = {
      [ATTR.operationName]: 'execute_tool',
      [ATTR.toolName]: event.toolName,
      [ATTR.toolCallId]: event.toolCallId,
      [ATTR.toolType]: 'function',
      [ATTR.runId]: event.runId,
    };
    const span = this.tracer.startSpan(
      `execute_tool ${event.toolName}`,
      { kind: SpanKind.INTERNAL, attributes },
      parent,
    );
    const content: Attributes = {};
    this.addContent(content, span, ATTR.toolArguments, () => event.args);
    span.setAttributes(content);
    const tool: ToolTrace = { span, context: trace.setSpan(parent, span), pending: false };
    run.tools.set(event.toolCallId, tool);
    openToolCall(event.toolCallId, tool.context);
  }

  private endTool(run: RunTrace, event: ToolExecutionEndEvent): void {
    const tool = run.tools.get(event.toolCallId);
    if (tool === undefined) return;
    run.tools.delete(event.toolCallId);
    closeToolCall(event.toolCallId, tool.context);
    const { span } = tool;
    const attributes: Attributes = { [ATTR.toolOutcome]: event.outcome };
    this.addContent(attributes, span, ATTR.toolResult, () => event.result.content);
    span.setAttributes(attributes);
    if (event.outcome === 'error') failed(span, 'tool_error', undefined);
    span.end();
  }

  private endTurn(run: RunTrace, turn: TurnTrace): void {
    if (turn.attempt !== undefined) {
      // A call still in flight when its turn ends (only when the source stops early).
      this.endAttempt(run, turn.attempt, undefined, undefined);
      turn.attempt = undefined;
    }
    if (run.turn === turn) run.turn = undefined;
    turn.span.end();
  }

  /**
   * Ends a run's span and whatever is still open in it: held tool calls (`pending` when the run suspended), a turn
   * left without `turn_end`. `outcome` undefined: the tracer was detached mid-run.
   */
  private endRun(run: RunTrace, outcome: string | undefined, error: unknown, end?: AgentEndEvent): void {
    for (const [toolCallId, tool] of run.tools) {
      closeToolCall(toolCallId, tool.context);
      tool.span.setAttribute(ATTR.toolOutcome, tool.pending ? 'pending' : 'interrupted');
      tool.span.end();
    }
    run.tools.clear();
    if (run.compaction !== undefined) {
      run.compaction.span.setAttribute(ATTR.compactionOutcome, 'interrupted');
      run.compaction.span.end();
      run.compaction = undefined;
    }
    if (run.turn !== undefined) this.endTurn(run, run.turn);
    const { span } = run;
    const attributes: Attributes = {};
    if (outcome !== undefined) attributes[ATTR.runOutcome] = outcome;
    if (end !== undefined) Object.assign(attributes, usageAttributes(end.usage));
    const last = run.lastAssistant;
    if (last !== undefined) {
      attributes[ATTR.responseModel] = last.model;
      this.addContent(attributes, span, ATTR.outputMessages, () => [assistantMessage(last)]);
    }
    span.setAttributes(attributes);
    if (outcome === 'failed') {
      if (last?.stopReason === 'error') failed(span, last.errorKind, last.errorMessage);
      else failed(span, undefined, error === undefined ? undefined : errorText(error));
    }
    span.end();
  }

  /** Adds a content attribute to `attributes` when content is recorded (and the span is sampled), redacted. */
  private addContent(attributes: Attributes, span: Span, key: string, value: () => unknown): void {
    if (!this.recordContent || !span.isRecording()) return;
    let recorded: unknown = value();
    if (this.redact !== undefined) {
      try {
        recorded = this.redact(key, recorded);
      } catch (error) {
        diag.warn(`cubepi tracing: the redactor threw on ${key}; nothing recorded for it`, error);
        return;
      }
    }
    if (recorded === undefined) return;
    attributes[key] = typeof recorded === 'string' ? recorded : JSON.stringify(recorded);
  }
}

/** Marks a span failed: status ERROR, `error.type` the error kind (`_OTHER` when unknown), the message as status. */
/** `cubepi.middleware.version` of a middleware that declared a version (spread into the attributes naming it). */
function versionOf(run: RunTrace, middleware: string): Attributes {
  const version = run.versions?.get(middleware);
  return version === undefined ? NO_ATTRIBUTES : { [ATTR.middlewareVersion]: version };
}

const NO_ATTRIBUTES: Attributes = Object.freeze({});

function failed(span: Span, kind: string | undefined, message: string | undefined): void {
  span.setAttribute(ATTR.errorType, kind ?? OTHER_ERROR);
  span.setStatus(message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message });
}

/** The attributes of an attempt's metrics (never content). */
function metricAttributes(
  attempt: AttemptTrace,
  responseModel: string | undefined,
  errorType: string | undefined,
): Attributes {
  const attributes: Attributes = {
    [ATTR.operationName]: 'chat',
    [ATTR.providerName]: attempt.provider,
    [ATTR.requestModel]: attempt.model,
  };
  if (responseModel !== undefined) attributes[ATTR.responseModel] = responseModel;
  if (errorType !== undefined) attributes[ATTR.errorType] = errorType;
  return attributes;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `fn()`, or `undefined` (reported to `diag`) when it throws. */
function guarded<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch (error) {
    diag.error('cubepi tracing: creating the metric instruments failed', error);
    return undefined;
  }
}
