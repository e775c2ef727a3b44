/**
 * The OpenTelemetry context of each open `execute_tool` span, for runs started inside a tool.
 * @module
 */
import { context, type Context } from '@opentelemetry/api';

/**
 * Open tool calls by id, across every tracer of this module. Tool-call ids are unique among calls running at once in
 * a process for the built-in providers (Anthropic, OpenAI and faux ids are); a clash means the later call wins.
 */
const open = new Map<string, Context>();

/** Records the context of a tool call's span while it runs. */
export function openToolCall(toolCallId: string, ctx: Context): void {
  open.set(toolCallId, ctx);
}

/** Forgets a tool call's context when its span ends (only if it is still the one recorded). */
export function closeToolCall(toolCallId: string, ctx: Context): void {
  if (open.get(toolCallId) === ctx) open.delete(toolCallId);
}

/**
 * The OpenTelemetry context whose active span is the `execute_tool` span of the running tool call `toolCallId`
 * (traced by `traceAgent` or `traceEvents`), or `undefined` when no traced call with that id is running. A run
 * started inside the tool becomes a child of that span when this context is active as the run starts (see
 * {@link withToolCallContext}) or is passed as the `parent` option.
 *
 * @example
 * execute: (toolCallId, { question }) => {
 *   const researcher = new Agent({ provider, model });
 *   traceAgent(researcher, { parent: toolCallContext(toolCallId) });
 *   return researcher.prompt(question).then((messages) => textOf(messages.at(-1)!));
 * }
 */
export function toolCallContext(toolCallId: string): Context | undefined {
  return open.get(toolCallId);
}

/**
 * Calls `fn` with the `execute_tool` span of the running tool call `toolCallId` as the active span
 * (`context.with`), so that a traced run started inside becomes its child. This needs a context manager that follows
 * async work (the Node SDK registers `AsyncLocalStorageContextManager`); without one, pass
 * {@link toolCallContext} as the nested tracer's `parent`. When the call is not traced, `fn` runs in the active context.
 *
 * @example
 * execute: (toolCallId, { question }) => withToolCallContext(toolCallId, () => researcher.prompt(question))
 */
export function withToolCallContext<T>(toolCallId: string, fn: () => T): T {
  return context.with(open.get(toolCallId) ?? context.active(), fn);
}

/** Open runs by id (their `invoke_agent` span's context), across every tracer of this module: for runs a hook starts. */
const openRuns = new Map<string, Context>();

/** Records the context of a run's `invoke_agent` span while it runs. */
export function openRunContext(runId: string, ctx: Context): void {
  openRuns.set(runId, ctx);
}

/** Forgets a run's context when its span ends (only if it is still the one recorded). */
export function closeRunContext(runId: string, ctx: Context): void {
  if (openRuns.get(runId) === ctx) openRuns.delete(runId);
}

/**
 * The OpenTelemetry context whose active span is the `invoke_agent` span of the traced run `runId`, or `undefined`
 * when no traced run with that id is open. A run whose `agent_start.parent` names a run but no tool call (a run a hook
 * started, see `childRunOptions`) becomes a child of that span.
 */
export function runContext(runId: string): Context | undefined {
  return openRuns.get(runId);
}
