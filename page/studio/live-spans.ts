/**
 * A live run's agent events as timeline spans, shaped as the trace reader shapes a recorded run (src/studio/traces.ts,
 * through the same src/studio/span-shapes.ts), so a run looks the same while it streams and once it is in the file.
 * @module
 */
import { defer, filter, map, type OperatorFunction } from 'rxjs';
import type { AgentEvent } from '../../src/types/agent-events.js';
import type { StudioSpan, StudioSpanKind } from '../../src/studio/api.js';
import { spanLabelOf } from '../../src/studio/span-shapes.js';
import { providerName, usageAttributes } from '../../src/tracing/gen-ai-attributes.js';

/** Options of {@link spansFromEvents}. */
export interface SpansFromEventsOptions {
  /** The clock the spans' times are read from, in ms since the epoch (default `Date.now`; a test's scheduler). */
  readonly now?: (() => number) | undefined;
}

type Attributes = Record<string, unknown>;

/** What is open in one run. */
interface LiveRun {
  readonly runId: string;
  readonly spanId: string;
  turn: string | undefined;
  attempt: string | undefined;
  fallbackFrom: string | undefined;
  compaction: { readonly spanId: string; readonly invocationId: string } | undefined;
  readonly tools: Map<string, string>;
  /** Approval bars open, by the tool call they wait for. */
  readonly approvals: Map<string, string>;
  instants: number;
}

/**
 * The spans so far of the runs the events belong to (a child run under the tool call that started it): a new frozen
 * array per change, spans unchanged by an event kept as the same objects (the timeline redraws only what changed),
 * open spans `running` with `durationMs: null`. `invoke_agent` per run, `turn N` per turn, `chat <model>` per model
 * attempt (a retry or a fallback ends the attempt before it as an error; the fallback named on the next one),
 * `execute_tool` per tool call, an `approval` bar from the request to the call's end, and instants for hook errors,
 * trimmed context, guardrail trips, handoffs and state patches. `agent_end` closes every span its run left open
 * (whatever the outcome: a held call ends `pending`, others `interrupted`, as the tracer does). Events that change
 * no span (`message_update`, …) emit nothing. Pure: the state is per subscription, and times come from `now`.
 *
 * ```
 * events:  a--t--m--u--u--e--T--E--|
 * spans:   a--b--c--------d--e--f--|   (each a new frozen array; u changes nothing)
 * ```
 *
 * @example
 * fromAgentEvents(url).pipe(map((e) => e.event), spansFromEvents()).subscribe((spans) => timeline.show(spans));
 */
export function spansFromEvents(
  options: SpansFromEventsOptions = {},
): OperatorFunction<AgentEvent, readonly StudioSpan[]> {
  const now = options.now ?? Date.now;
  return (events$) =>
    defer(() => {
      const spans: StudioSpan[] = [];
      const position = new Map<string, number>();
      const runs = new Map<string, LiveRun>();
      /** The tool call spans by call id, across runs (a child run's parent). */
      const toolSpans = new Map<string, string>();
      let changed = false;

      /** The spans still open, with the run each belongs to (agent_end closes what its run left open). */
      const openSpans = new Map<string, string>();
      /** Opens a span (ids made unique: a resumed run repeats its tool call ids); returns its id. */
      const open = (
        runId: string,
        wanted: string,
        parentSpanId: string | null,
        kind: StudioSpanKind,
        name: string,
        attributes: Attributes,
        durationMs: number | null = null,
        error = false,
      ): string => {
        let spanId = wanted;
        for (let n = 2; position.has(spanId); n++) spanId = `${wanted}#${n}`;
        const span: StudioSpan = Object.freeze({
          spanId,
          parentSpanId,
          kind,
          label: spanLabelOf(kind, name, attributes),
          startMs: now(),
          durationMs,
          status: durationMs === null ? 'running' : error ? 'error' : 'ok',
          attributes: Object.freeze(attributes),
        });
        position.set(spanId, spans.length);
        spans.push(span);
        if (durationMs === null) openSpans.set(spanId, runId);
        changed = true;
        return spanId;
      };
      const update = (spanId: string | undefined, change: (span: StudioSpan) => Partial<StudioSpan>): void => {
        if (spanId === undefined) return;
        const at = position.get(spanId);
        if (at === undefined) return;
        const span = spans[at]!;
        spans[at] = Object.freeze({ ...span, ...change(span) });
        changed = true;
      };
      const close = (spanId: string | undefined, attributes: Attributes = {}, error = false): void => {
        if (spanId !== undefined) openSpans.delete(spanId);
        update(spanId, (span) =>
          span.durationMs !== null
            ? { attributes: Object.freeze({ ...span.attributes, ...attributes }) }
            : {
                durationMs: Math.max(0, now() - span.startMs),
                status: error ? 'error' : 'ok',
                attributes: Object.freeze({ ...span.attributes, ...attributes }),
              },
        );
      };
      const instant = (
        run: LiveRun,
        parent: string,
        kind: StudioSpanKind,
        label: string,
        attributes: Attributes,
        error: boolean,
      ) => {
        run.instants += 1;
        // Kinds whose label is the name given (hook, guardrail, handoff, other): the label is the instant's own.
        open(run.runId, `${run.spanId}/i${run.instants}`, parent, kind, label, attributes, 0, error);
      };
      const endAttempt = (run: LiveRun, attributes: Attributes, error: boolean): void => {
        close(run.attempt, attributes, error);
        run.attempt = undefined;
      };
      const endTools = (run: LiveRun, outcome: (toolCallId: string) => string): void => {
        for (const [toolCallId, spanId] of run.tools) {
          const held = run.approvals.get(toolCallId);
          close(spanId, { 'cubepi.tool.outcome': outcome(toolCallId) });
          if (held !== undefined) {
            const suspended = outcome(toolCallId) === 'pending';
            close(held);
            if (suspended) update(held, (span) => ({ label: `${span.label} (run suspended)` }));
          }
        }
        run.tools.clear();
        run.approvals.clear();
      };

      const step = (event: AgentEvent): void => {
        if (event.type === 'agent_start') {
          const spanId = `run:${event.runId}`;
          const parentTool =
            event.parent?.toolCallId === undefined ? undefined : toolSpans.get(event.parent.toolCallId);
          const parent = parentTool ?? (event.parent === undefined ? undefined : runs.get(event.parent.runId)?.spanId);
          const opened = open(event.runId, spanId, parent ?? null, 'run', 'invoke_agent', {
            'gen_ai.operation.name': 'invoke_agent',
            'cubepi.run_id': event.runId,
          });
          runs.set(event.runId, {
            runId: event.runId,
            spanId: opened,
            turn: undefined,
            attempt: undefined,
            fallbackFrom: undefined,
            compaction: undefined,
            tools: new Map(),
            approvals: new Map(),
            instants: 0,
          });
          return;
        }
        const run = runs.get(event.runId);
        if (run === undefined) return;
        const here = run.turn ?? run.spanId;
        switch (event.type) {
          case 'turn_start': {
            if (run.turn !== undefined) close(run.turn);
            const spanId = `turn:${event.runId}:${event.turnIndex}`;
            const attributes: Attributes = { 'cubepi.run_id': event.runId, 'cubepi.turn_index': event.turnIndex };
            if (event.agent !== undefined) attributes['gen_ai.agent.name'] = event.agent;
            run.turn = open(event.runId, spanId, run.spanId, 'turn', `turn ${event.turnIndex}`, attributes);
            return;
          }
          case 'model_attempt': {
            if (run.compaction?.invocationId === event.invocationId) return;
            if (run.turn === undefined) return;
            if (run.attempt !== undefined) {
              endAttempt(run, { 'error.type': event.previous?.errorKind ?? '_OTHER' }, true);
            }
            const attributes: Attributes = {
              'gen_ai.operation.name': 'chat',
              'gen_ai.provider.name': providerName(event.provider),
              'gen_ai.request.model': event.model,
              'cubepi.run_id': event.runId,
              'cubepi.turn_index': event.turnIndex,
              'cubepi.invocation_id': event.invocationId,
              'cubepi.attempt_id': event.attemptId,
              'cubepi.attempt': event.attempt,
            };
            if (run.fallbackFrom !== undefined) attributes['cubepi.fallback_from'] = run.fallbackFrom;
            run.fallbackFrom = undefined;
            run.attempt = open(
              event.runId,
              `model:${event.attemptId}`,
              run.turn,
              'model',
              `chat ${event.model}`,
              attributes,
            );
            return;
          }
          case 'model_fallback':
            run.fallbackFrom = `${event.from.provider}/${event.from.model}`;
            return;
          case 'message_end': {
            const message = event.message;
            if (message.role !== 'assistant' || run.attempt === undefined) return;
            const attributes: Attributes = {
              'gen_ai.response.model': message.model,
              'cubepi.stop_reason': message.stopReason,
              ...usageAttributes(message.usage),
            };
            const error = message.stopReason === 'error';
            if (error) attributes['error.type'] = message.errorKind ?? '_OTHER';
            endAttempt(run, attributes, error);
            return;
          }
          case 'tool_execution_start': {
            const spanId = open(
              event.runId,
              `tool:${event.toolCallId}`,
              here,
              'tool',
              `execute_tool ${event.toolName}`,
              {
                'gen_ai.operation.name': 'execute_tool',
                'gen_ai.tool.name': event.toolName,
                'gen_ai.tool.call.id': event.toolCallId,
                'gen_ai.tool.type': 'function',
                'cubepi.run_id': event.runId,
              },
            );
            run.tools.set(event.toolCallId, spanId);
            toolSpans.set(event.toolCallId, spanId);
            return;
          }
          case 'tool_execution_end': {
            const spanId = run.tools.get(event.toolCallId);
            close(run.approvals.get(event.toolCallId));
            run.approvals.delete(event.toolCallId);
            if (spanId === undefined) return;
            run.tools.delete(event.toolCallId);
            const error = event.outcome === 'error';
            close(
              spanId,
              error
                ? { 'cubepi.tool.outcome': event.outcome, 'error.type': 'tool_error' }
                : { 'cubepi.tool.outcome': event.outcome },
              error,
            );
            return;
          }
          case 'approval_requested': {
            const tool = run.tools.get(event.toolCallId);
            const attributes = {
              event: 'approval_requested',
              'cubepi.approval.request_id': event.requestId,
              'gen_ai.tool.name': event.toolName,
            };
            // A second request for the same call replaces the first (closed: the wait it stood for is over).
            close(run.approvals.get(event.toolCallId));
            const spanId = open(
              event.runId,
              `approval:${event.requestId}`,
              tool ?? here,
              'approval',
              `approval ${event.toolName}`,
              attributes,
            );
            update(tool, (span) => ({
              attributes: Object.freeze({ ...span.attributes, 'cubepi.approval.request_id': event.requestId }),
            }));
            run.approvals.set(event.toolCallId, spanId);
            return;
          }
          case 'hook_error': {
            const attributes: Attributes = {
              event: 'hook_error',
              'cubepi.middleware': event.middleware,
              'cubepi.hook': event.hook,
            };
            if (event.attempt !== undefined) attributes['cubepi.hook.attempt'] = event.attempt;
            instant(run, here, 'hook', `${event.hook} · ${event.middleware}`, attributes, true);
            return;
          }
          case 'context_trimmed':
            instant(
              run,
              here,
              'hook',
              `context trimmed · ${event.middleware}`,
              {
                event: 'context_trimmed',
                'cubepi.middleware': event.middleware,
                'cubepi.context.dropped': event.dropped,
                'cubepi.context.budget': event.budget,
              },
              false,
            );
            return;
          case 'guardrail_tripped': {
            const tool = event.toolCallId === undefined ? undefined : run.tools.get(event.toolCallId);
            instant(
              run,
              tool ?? here,
              'guardrail',
              `guardrail ${event.guardrail} · ${event.action}`,
              {
                event: 'guardrail_tripped',
                'cubepi.guardrail.name': event.guardrail,
                'cubepi.guardrail.kind': event.kind,
                'cubepi.guardrail.action': event.action,
              },
              true,
            );
            return;
          }
          case 'handoff':
            instant(
              run,
              run.spanId,
              'handoff',
              `handoff ${event.from} → ${event.to}`,
              {
                event: 'handoff',
                'cubepi.handoff.from': event.from,
                'cubepi.handoff.to': event.to,
                'gen_ai.tool.call.id': event.toolCallId,
              },
              false,
            );
            return;
          case 'state_patched':
            instant(
              run,
              here,
              'other',
              `state · ${event.producer} v${event.version}`,
              {
                event: 'state_patched',
                'cubepi.state.producer': event.producer,
                'cubepi.state.version': event.version,
              },
              false,
            );
            return;
          case 'compaction_start': {
            if (run.compaction !== undefined)
              close(run.compaction.spanId, { 'cubepi.compaction.outcome': 'interrupted' });
            const spanId = open(event.runId, `compaction:${event.invocationId}`, here, 'compaction', 'compaction', {
              'cubepi.run_id': event.runId,
              'cubepi.middleware': event.middleware,
              'cubepi.invocation_id': event.invocationId,
              'cubepi.compaction.reason': event.reason,
              'cubepi.compaction.through_seq': event.throughSeq,
            });
            run.compaction = { spanId, invocationId: event.invocationId };
            return;
          }
          case 'compaction_end': {
            if (run.compaction === undefined) return;
            const failed = event.outcome === 'failed';
            close(
              run.compaction.spanId,
              {
                'cubepi.compaction.outcome': event.outcome,
                ...(event.usage === undefined ? {} : usageAttributes(event.usage)),
              },
              failed,
            );
            run.compaction = undefined;
            return;
          }
          case 'turn_end': {
            if (run.turn === undefined) return;
            if (run.attempt !== undefined) endAttempt(run, {}, false);
            const error = event.message.stopReason === 'error';
            close(
              run.turn,
              {
                'cubepi.stop_reason': event.message.stopReason,
                ...(error ? { 'error.type': event.message.errorKind ?? '_OTHER' } : {}),
              },
              error,
            );
            run.turn = undefined;
            return;
          }
          case 'agent_end': {
            runs.delete(event.runId);
            const pending = new Set((event.pending ?? []).map((request) => request.toolCallId));
            endTools(run, (id) => (event.outcome === 'suspended' || pending.has(id) ? 'pending' : 'interrupted'));
            if (run.compaction !== undefined)
              close(run.compaction.spanId, { 'cubepi.compaction.outcome': 'interrupted' });
            if (run.attempt !== undefined) endAttempt(run, {}, false);
            if (run.turn !== undefined) close(run.turn);
            // Whatever else is open in the run (an approval without its call, a call started twice) ends with it.
            for (const [spanId, runId] of openSpans) if (runId === event.runId && spanId !== run.spanId) close(spanId);
            close(
              run.spanId,
              { 'cubepi.run.outcome': event.outcome, ...usageAttributes(event.usage) },
              event.outcome === 'failed',
            );
            return;
          }
          default:
            return;
        }
      };

      return events$.pipe(
        map((event) => {
          changed = false;
          step(event);
          return changed;
        }),
        filter((didChange) => didChange),
        map(() => Object.freeze(spans.slice())),
      );
    });
}
