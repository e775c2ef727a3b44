/**
 * Options of `traceAgent` and `traceEvents`.
 * @module
 */
import type { Context, Meter, Tracer } from '@opentelemetry/api';

/**
 * Rewrites a content attribute before it is recorded (only with `recordContent: true`). `key` is the attribute
 * (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`,
 * `cubepi.approval.reason`, `exception.message`), `value` what would be recorded, as a value (messages in the GenAI
 * conventions' shape, a tool's arguments object, a result's content blocks, a string). Return what to record instead
 * (a string is recorded as it is, anything else as JSON), or `undefined` to record nothing. A redactor that throws
 * records nothing for that attribute.
 */
export type ContentRedactor = (key: string, value: unknown) => unknown;

/** Options of {@link traceAgent} and {@link traceEvents}. */
export interface TracingOptions {
  /**
   * Where spans go. Default: `trace.getTracer('cubepi', version)` from `@opentelemetry/api`, which records nothing
   * until an OpenTelemetry SDK is registered.
   */
  readonly tracer?: Tracer | undefined;
  /**
   * Where the metrics go. Default: `metrics.getMeter('cubepi', version)`, looked up at each run's start (so an SDK
   * registered after `traceAgent` is used from the next run on; nothing is recorded until one is).
   */
  readonly meter?: Meter | undefined;
  /**
   * Record prompts, completions, tool arguments and results, approval reasons and hook error messages as span
   * attributes (default false: only sizes, ids and a hash of the prompt). API keys and headers are never recorded.
   */
  readonly recordContent?: boolean | undefined;
  /** Applied to every content attribute before it is recorded (with `recordContent`). */
  readonly redact?: ContentRedactor | undefined;
  /** The parent of each run's `invoke_agent` span. Default: the active context when the run starts. */
  readonly parent?: Context | undefined;
  /** `gen_ai.agent.name`, and the suffix of the `invoke_agent` span's name. */
  readonly agentName?: string | undefined;
  /** `cubepi.thread_id` and `gen_ai.conversation.id` (the events do not carry the thread). */
  readonly threadId?: string | undefined;
}
