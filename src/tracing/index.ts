/**
 * `cubepi/tracing`: OpenTelemetry traces and metrics of agent runs, with the GenAI semantic conventions, read from the
 * event stream. Needs `@opentelemetry/api` (an optional peer dependency: the other entry points never load it).
 * @module
 */
export { traceAgent } from './trace-agent.js';
export { traceEvents } from './trace-events.js';
export { toolCallContext, withToolCallContext } from './tool-call-context.js';
export type { ContentRedactor, TracingOptions } from './tracing-options.js';
