/**
 * Tracing an Agent: its events$ into OpenTelemetry spans and metrics.
 * @module
 */
import type { Observable } from 'rxjs';
import type { AgentEvent } from '../types/agent-events.js';
import { SpanRecorder } from './span-recorder.js';
import type { TracingOptions } from './tracing-options.js';

/**
 * Traces every run of `agent` with OpenTelemetry, from its `events$` (it subscribes; it patches nothing and wraps no
 * call): an `invoke_agent` span per run, a `turn {i}` span per turn, a `chat {model}` span per model attempt (retries
 * and fallbacks are sibling attempts) and an `execute_tool {name}` span per tool call, with the GenAI semantic
 * conventions' attributes; and the GenAI client metrics. Returns the function that detaches it (spans still open are
 * ended then).
 *
 * It never blocks or fails a run: recording is synchronous bookkeeping, exporting is the SDK's span processor's
 * business, and every exception of the tracer, the meter, an exporter or the redactor is caught and reported to
 * OpenTelemetry's `diag` logger. Without an OpenTelemetry SDK registered (and no `tracer` given) the spans are
 * no-ops. Prompts, completions, tool arguments and results are recorded only with `recordContent: true`.
 *
 * A run's span is a child of `options.parent`, else of the context active when the run starts — a run started inside
 * a traced tool call is nested under its `execute_tool` span when that call's context is active
 * ({@link withToolCallContext}) or passed as `parent` ({@link toolCallContext}).
 *
 * @example
 * import { traceAgent } from 'cubepi/tracing';
 *
 * const agent = new Agent({ provider, model, tools });
 * const detach = traceAgent(agent, { agentName: 'support' });
 * await agent.prompt('Where is my order?');
 * detach();
 */
export function traceAgent(
  agent: { readonly events$: Observable<AgentEvent> },
  options: TracingOptions = {},
): () => void {
  const recorder = new SpanRecorder(options);
  const subscription = agent.events$.subscribe({ next: (event) => recorder.record(event) });
  return () => {
    subscription.unsubscribe();
    recorder.close('detached');
  };
}
