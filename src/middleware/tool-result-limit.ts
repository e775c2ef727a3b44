/**
 * ToolResultLimit: tool text over a limit is cut, with a marker the model can see.
 * @module
 */
import { map, type Observable } from 'rxjs';
import type { ToolResultContent } from '../types/content.js';
import { ConfigurationError } from '../types/errors.js';
import type { AgentToolResult } from '../types/tool.js';
import type { Middleware } from './types.js';
import type { ToolCallContext, ToolCallNext, ToolCallRequest, ToolOutcome } from './wrapper-types.js';

/** What was cut from one tool result, for the marker. */
export interface ToolResultCut {
  readonly toolName: string;
  /** The characters of text the tool returned, over all its text blocks. */
  readonly totalChars: number;
  /** The characters left out. */
  readonly cutChars: number;
  /** The limit that applied. */
  readonly maxChars: number;
}

/** Options of {@link ToolResultLimit}. */
export interface ToolResultLimitOptions {
  /** The most characters of text a tool result keeps, over all its text blocks (default 30,000). */
  readonly maxChars?: number | undefined;
  /** Limits per tool name, over `maxChars`; `Infinity` leaves a tool's results whole. */
  readonly perTool?: Readonly<Record<string, number>> | undefined;
  /**
   * What is kept: `head`, the beginning (default), or `headAndTail`, half from the beginning and half from the end (a
   * log's last lines are often what matters), with the marker between them.
   */
  readonly keep?: 'head' | 'headAndTail' | undefined;
  /** The text the model sees where text was cut (default: `[… N of M characters cut by ToolResultLimit …]`). */
  readonly marker?: ((cut: ToolResultCut) => string) | undefined;
  /** The middleware's name (default `ToolResultLimit`). */
  readonly name?: string | undefined;
}

/** The default of {@link ToolResultLimitOptions.maxChars}. */
export const DEFAULT_TOOL_RESULT_MAX_CHARS = 30_000;

/**
 * A middleware that cuts the text of a tool result over `maxChars` characters (counted over all its text blocks) and
 * puts a marker the model can see where text was cut, so one large result (a file dump, a log, a web page) cannot fill
 * the context window. Images and files pass unchanged; `details` (for the host, not the model) are left whole, as is a
 * tool's streamed progress (`tool_execution_update`).
 *
 * It is a `wrapToolCall` layer (phase `context`), so it cuts what the tool returned **before** `afterToolCall` runs:
 * every `afterToolCall` hook (a `RedactToolResults`, an audit log) sees the cut result and composes with it. (As an
 * `afterToolCall` hook it could not: each hook is given the tool's own result, and a later hook's `content` replaces
 * an earlier one's.) Layers outside it (tracing, phase `observe`) see the cut result; layers inside it (a cache, a
 * retry) see the whole one. The stored result message is the cut one: the full text is not kept.
 *
 * @example
 * new Agent({ provider, model, tools, middleware: [new ToolResultLimit({ maxChars: 20_000, keep: 'headAndTail' })] });
 */
export class ToolResultLimit implements Middleware {
  readonly name: string;
  readonly phase = 'context' as const;
  private readonly maxChars: number;
  private readonly perTool: Readonly<Record<string, number>>;
  private readonly keep: 'head' | 'headAndTail';
  private readonly marker: (cut: ToolResultCut) => string;

  /** Throws {@link ConfigurationError} for a limit that is not a non-negative number, an unknown `keep`, a bad marker. */
  constructor(options: ToolResultLimitOptions = {}) {
    this.name = options.name ?? 'ToolResultLimit';
    this.maxChars = checkLimit(options.maxChars ?? DEFAULT_TOOL_RESULT_MAX_CHARS, 'maxChars');
    const perTool: Record<string, number> = {};
    for (const [tool, limit] of Object.entries(options.perTool ?? {}))
      perTool[tool] = checkLimit(limit, `perTool.${tool}`);
    this.perTool = perTool;
    const keep = options.keep ?? 'head';
    if (keep !== 'head' && keep !== 'headAndTail')
      throw new ConfigurationError(
        `ToolResultLimit: keep must be "head" or "headAndTail", not ${JSON.stringify(keep)}`,
      );
    this.keep = keep;
    if (options.marker !== undefined && typeof options.marker !== 'function')
      throw new ConfigurationError('ToolResultLimit: marker must be a function (cut) => string');
    this.marker = options.marker ?? defaultMarker;
  }

  /** Executes the call, then cuts its result's text to the tool's limit. */
  wrapToolCall(call: ToolCallRequest, _ctx: ToolCallContext, next: ToolCallNext): Observable<ToolOutcome> {
    const toolName = call.toolCall.name;
    const maxChars = Object.hasOwn(this.perTool, toolName) ? this.perTool[toolName]! : this.maxChars;
    if (maxChars === Infinity) return next(call);
    return next(call).pipe(
      map((outcome) => {
        const result = limitToolResult(outcome.result, maxChars, { toolName, keep: this.keep, marker: this.marker });
        return result === outcome.result ? outcome : { ...outcome, result };
      }),
    );
  }
}

/**
 * `result` with its text cut to `maxChars` characters over all its text blocks (in order), and the marker in place
 * of what was left out; `result` itself (the same object) when its text is within the limit. Text blocks past the
 * limit are dropped; other blocks keep their place. The marker's characters do not count against the limit.
 */
export function limitToolResult(
  result: AgentToolResult,
  maxChars: number,
  options: {
    readonly toolName?: string | undefined;
    readonly keep?: 'head' | 'headAndTail' | undefined;
    readonly marker?: ((cut: ToolResultCut) => string) | undefined;
  } = {},
): AgentToolResult {
  let totalChars = 0;
  for (const block of result.content) if (block.type === 'text') totalChars += block.text.length;
  if (totalChars <= maxChars) return result;
  const cut: ToolResultCut = {
    toolName: options.toolName ?? '',
    totalChars,
    cutChars: totalChars - maxChars,
    maxChars,
  };
  const marker = (options.marker ?? defaultMarker)(cut);
  const head = options.keep === 'headAndTail' ? Math.ceil(maxChars / 2) : maxChars;
  const tail = maxChars - head;
  // Character offsets over the concatenated text: [0, head) is kept, then the marker, then [totalChars - tail, end).
  const tailFrom = totalChars - tail;
  const content: ToolResultContent[] = [];
  let offset = 0;
  let marked = false;
  for (const block of result.content) {
    if (block.type !== 'text') {
      content.push(block);
      continue;
    }
    const start = offset;
    const end = offset + block.text.length;
    offset = end;
    let text = '';
    if (start < head) text += block.text.slice(0, Math.min(head, end) - start);
    if (!marked && end > head) {
      text += text === '' ? marker : `\n${marker}`;
      marked = true;
    }
    if (end > tailFrom && tail > 0) {
      const kept = block.text.slice(Math.max(tailFrom, start) - start);
      text += text === '' ? kept : `\n${kept}`;
    }
    if (text !== '') content.push({ type: 'text', text });
  }
  return { ...result, content };
}

function defaultMarker(cut: ToolResultCut): string {
  const n = (value: number) => value.toLocaleString('en-US');
  return `[… ${n(cut.cutChars)} of ${n(cut.totalChars)} characters cut by ToolResultLimit (limit ${n(cut.maxChars)}) …]`;
}

function checkLimit(limit: unknown, what: string): number {
  if (typeof limit !== 'number' || Number.isNaN(limit) || limit < 0 || (!Number.isInteger(limit) && limit !== Infinity))
    throw new ConfigurationError(`ToolResultLimit: ${what} must be a non-negative integer or Infinity`);
  return limit;
}
