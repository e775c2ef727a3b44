/**
 * `toolGuardrail`: checks of a tool call's validated arguments before it runs, and of its result before the model
 * sees it.
 * @module
 */
import type { Observable } from 'rxjs';
import { concatMap, defer, of } from 'rxjs';
import type { Middleware } from '../middleware/types.js';
import type { ToolCallContext, ToolCallDecision, ToolOutcome } from '../middleware/wrapper-types.js';
import type { ToolCall } from '../types/content.js';
import { Decision } from '../types/decision.js';
import { ConfigurationError } from '../types/errors.js';
import type { AgentToolResult } from '../types/tool.js';
import {
  checkGuardrailOptions,
  DEFAULT_GUARDRAIL_TIMEOUT_MS,
  emitGuardrailTrip,
  runGuardrailCheck,
  tripOf,
  type GuardrailAnswer,
} from './run-guardrail-check.js';
import type { TextCheck, TextCheckContext } from './verdict.js';

/** What a tool guardrail's `args` check inspects: the call, its validated arguments (and their JSON as `text`). */
export interface GuardrailToolArgs {
  readonly toolName: string;
  readonly toolCall: ToolCall;
  readonly args: Readonly<Record<string, unknown>>;
  /** The arguments as JSON. */
  readonly text: string;
  readonly context: ToolCallContext;
}

/** What a tool guardrail's `result` check inspects: the call's result before the model sees it. */
export interface GuardrailToolResult {
  readonly toolName: string;
  readonly toolCall: ToolCall;
  readonly args: Readonly<Record<string, unknown>>;
  readonly result: AgentToolResult;
  readonly isError: boolean;
  /** The result's text blocks, joined. */
  readonly text: string;
  readonly context: ToolCallContext;
}

/** Options of {@link toolGuardrail}: a `name` and at least one of `args`, `result`, `text`. */
export interface ToolGuardrailOptions {
  /** The guardrail's name: on `guardrail_tripped`, `agent_end.stoppedBy`, and (as `tool-guardrail:<name>`) the chain. */
  readonly name: string;
  /** Which tools it guards (default: all). */
  readonly tools?: readonly string[] | undefined;
  /** A check of the validated arguments, before the tool runs. A `rewrite` is not allowed here (a trip with reason). */
  readonly args?: ((call: GuardrailToolArgs, context: TextCheckContext) => GuardrailAnswer) | undefined;
  /** A check of the result, before the model sees it: a `rewrite` replaces its text (a redaction). */
  readonly result?: ((result: GuardrailToolResult, context: TextCheckContext) => GuardrailAnswer) | undefined;
  /** A {@link TextCheck} of the result's text (used when `result` is absent), e.g. `piiCheck()` to redact. */
  readonly text?: TextCheck | undefined;
  /** On a trip: `deny` (default; the call gets a denial result, outcome `denied`, the run goes on) or `stop`. */
  readonly action?: 'deny' | 'stop' | undefined;
  /** Whether the denial the model sees carries the guardrail's reason (default true) or only that it was denied. */
  readonly tellModel?: boolean | undefined;
  /** How long each check may take (default 30 000 ms); past it the guardrail trips with reason `timeout`. */
  readonly timeoutMs?: number | undefined;
  /** What a throwing check does: `stop` (default, the run fails with a `HookError`) or `skip`. */
  readonly onError?: 'stop' | 'skip' | undefined;
}

/**
 * A guardrail around tool calls, as a {@link Middleware} (a `wrapToolCall` in the `guard` phase):
 * - `args` sees the validated arguments before execution; a trip (or a timeout) means the tool is never called;
 * - `result` / `text` sees the result before the model does; a `rewrite` replaces its text content, a trip replaces
 *   the result with the denial;
 * - a trip emits `guardrail_tripped { kind: 'tool', toolCallId, action }`; with `action: 'deny'` (default) the call is
 *   answered with an error result, outcome `denied`, whose text is `Denied by guardrail <name>: <reason>` (or, with
 *   `tellModel: false`, `Denied by guardrail <name>`); with `action: 'stop'` the run ends `stopped`
 *   (`agent_end.stoppedBy`); a check that throws is a `HookError` naming `tool-guardrail:<name>`.
 *
 * @example
 * ```ts
 * toolGuardrail({ name: 'no-rm', tools: ['shell'], args: ({ args }) => (String(args.cmd).includes('rm ') ? { trip: true, reason: 'rm' } : 'pass') })
 * ```
 */
export function toolGuardrail(options: ToolGuardrailOptions): Middleware {
  checkGuardrailOptions('toolGuardrail', options);
  const { name, tools, action = 'deny', tellModel = true, timeoutMs = DEFAULT_GUARDRAIL_TIMEOUT_MS } = options;
  if (action !== 'deny' && action !== 'stop') {
    throw new ConfigurationError(`toolGuardrail ${name}: action must be 'deny' or 'stop'`);
  }
  for (const [key, value] of [
    ['args', options.args],
    ['result', options.result],
    ['text', options.text],
  ] as const) {
    if (value !== undefined && typeof value !== 'function') {
      throw new ConfigurationError(`toolGuardrail ${name}: ${key} must be a function`);
    }
  }
  const argsCheck = options.args;
  const text = options.text;
  const resultCheck =
    options.result ??
    (text === undefined
      ? undefined
      : (subject: GuardrailToolResult, context: TextCheckContext) => text(subject.text, context));
  if (argsCheck === undefined && resultCheck === undefined) {
    throw new ConfigurationError(`toolGuardrail ${name}: give args, result or text`);
  }
  const guarded = tools === undefined ? undefined : new Set(tools);
  return {
    name: `tool-guardrail:${name}`,
    phase: 'guard',
    nextCalls: { tool: 'at-most-once' },
    ...(options.onError === undefined ? {} : { onError: options.onError }),
    wrapToolCall(call, ctx, next) {
      if (guarded !== undefined && !guarded.has(call.tool.name)) return next(call);
      const { toolCall, args } = call;
      const toolName = call.tool.name;
      const denied = (
        settled: Parameters<typeof tripOf>[0],
      ): Observable<ToolOutcome | ToolCallDecision> | undefined => {
        const trip = tripOf(settled, timeoutMs);
        if (trip === undefined) return undefined;
        emitGuardrailTrip(ctx, { guardrail: name, kind: 'tool', action, toolCallId: toolCall.id, ...trip });
        if (action === 'stop') return of(Decision.stop('stopped', `Guardrail ${name} tripped: ${trip.reason}`, name));
        const denial = tellModel ? `Denied by guardrail ${name}: ${trip.reason}` : `Denied by guardrail ${name}`;
        return of({
          result: { content: [{ type: 'text', text: denial }], isError: true },
          isError: true,
          outcome: 'denied',
        });
      };
      const afterResult = (outcome: ToolOutcome): Observable<ToolOutcome | ToolCallDecision> => {
        if (resultCheck === undefined) return of(outcome);
        const subject: GuardrailToolResult = {
          toolName,
          toolCall,
          args,
          result: outcome.result,
          isError: outcome.isError,
          text: textOfResult(outcome.result),
          context: ctx,
        };
        return runGuardrailCheck(name, ctx, timeoutMs, (context) => resultCheck(subject, context)).pipe(
          concatMap((settled) => {
            const stop = denied(settled);
            if (stop !== undefined) return stop;
            if (settled !== 'pass' && settled !== 'timeout' && 'rewrite' in settled) {
              const content = [
                { type: 'text' as const, text: settled.text },
                ...outcome.result.content.filter((block) => block.type !== 'text'),
              ];
              return of({ ...outcome, result: { ...outcome.result, content } });
            }
            return of(outcome);
          }),
        );
      };
      const run = (): Observable<ToolOutcome | ToolCallDecision> => next(call).pipe(concatMap(afterResult));
      if (argsCheck === undefined) return defer(run);
      const subject: GuardrailToolArgs = { toolName, toolCall, args, text: JSON.stringify(args), context: ctx };
      return runGuardrailCheck(name, ctx, timeoutMs, (context) => argsCheck(subject, context)).pipe(
        concatMap((settled) => denied(settled) ?? run()),
      );
    },
  };
}

function textOfResult(result: AgentToolResult): string {
  let text = '';
  for (const block of result.content) if (block.type === 'text') text += block.text;
  return text;
}
