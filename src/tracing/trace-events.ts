/**
 * Tracing a bare run: an operator over an Observable of agent events.
 * @module
 */
import { context } from '@opentelemetry/api';
import { defer, tap, type MonoTypeOperatorFunction } from 'rxjs';
import type { AgentEvent } from '../types/agent-events.js';
import { SpanRecorder } from './span-recorder.js';
import type { TracingOptions } from './tracing-options.js';

/**
 * Traces the runs whose events pass through it, as {@link traceAgent} does for an Agent: for a bare `runAgentLoop`
 * Observable (or any stream of agent events). The events pass through untouched and unchanged in timing (recording
 * is a synchronous `tap`). Each subscription records on its own; its runs' spans are children of `options.parent`,
 * else of the context active at subscription. Unsubscribing before `agent_end` (cancelling the run) ends the open
 * spans with `cubepi.run.outcome` `cancelled`; an error of the source ends them as `failed`.
 *
 * ```
 * source: --s--t--a--m--e--|       (agent_start, turn_start, model_attempt, message_end, agent_end)
 * result: --s--t--a--m--e--|       (the same events; spans recorded on the side)
 * ```
 *
 * @example
 * import { runAgentLoop } from 'cubepi';
 * import { traceEvents } from 'cubepi/tracing';
 *
 * const run$ = runAgentLoop(options).pipe(traceEvents({ agentName: 'batch' }));
 */
export function traceEvents(options: TracingOptions = {}): MonoTypeOperatorFunction<AgentEvent> {
  return (source) =>
    defer(() => {
      const recorder = new SpanRecorder({ ...options, parent: options.parent ?? context.active() });
      return source.pipe(
        tap({
          next: (event) => recorder.record(event),
          error: (error: unknown) => recorder.close('failed', error),
          complete: () => recorder.close('completed'),
          unsubscribe: () => recorder.close('cancelled'),
        }),
      );
    });
}
