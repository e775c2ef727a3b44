/**
 * `outputGuardrail`: a check of the run's final answer, settled before its `message_end` and before it is stored.
 * @module
 */
import type { Observable } from 'rxjs';
import { concatMap, of } from 'rxjs';
import type { HookContext } from '../middleware/hook-context.js';
import type { Middleware } from '../middleware/types.js';
import type { ModelCallDecision } from '../middleware/wrapper-types.js';
import { Decision } from '../types/decision.js';
import { textOf, toolCallsOf, type AssistantMessage } from '../types/messages.js';
import type { StreamEvent } from '../types/stream-events.js';
import { inspectorOf } from './input-guardrail.js';
import {
  checkGuardrailOptions,
  DEFAULT_GUARDRAIL_TIMEOUT_MS,
  emitGuardrailTrip,
  runGuardrailCheck,
  tripOf,
  type GuardrailAnswer,
} from './run-guardrail-check.js';
import type { TextCheck, TextCheckContext } from './verdict.js';

/** What an output guardrail inspects: a final answer (an assistant message without tool calls). */
export interface GuardrailOutput {
  /** The answer's text (its text blocks joined). */
  readonly text: string;
  /** The complete answer, as the model gave it. */
  readonly message: AssistantMessage;
  /** The turn's hook context (read-only). */
  readonly context: HookContext;
}

/** Options of {@link outputGuardrail}: a `name` and either `text` (a {@link TextCheck}) or `inspect`. */
export interface OutputGuardrailOptions {
  /** The guardrail's name: on `guardrail_tripped`, `agent_end.stoppedBy`, and (as `output-guardrail:<name>`) the chain. */
  readonly name: string;
  /** A check of the answer's text. */
  readonly text?: TextCheck | undefined;
  /** A check of the whole answer (used when `text` is absent). */
  readonly inspect?: ((output: GuardrailOutput, context: TextCheckContext) => GuardrailAnswer) | undefined;
  /** How long the check may take (default 30 000 ms); past it the guardrail trips with reason `timeout`. */
  readonly timeoutMs?: number | undefined;
  /** What a throwing check does: `stop` (default, the run fails with a `HookError`) or `skip` (`hook_error`, pass). */
  readonly onError?: 'stop' | 'skip' | undefined;
}

/**
 * A guardrail on the run's final answers, as a {@link Middleware}: every turn's model call whose answer has no tool
 * calls and did not fail is checked when the model finished, before the loop sees the end of the call.
 *
 * Contract (proven in `marbles/guardrails.marble.test.ts` and `test/guardrails.test.ts`, see docs/guardrails.md):
 * - the check settles before the answer's `message_end` and before anything of the answer is stored;
 * - a trip (or a timeout) emits `guardrail_tripped` (`action: 'stop'`), then `message_retracted` for the streamed
 *   answer, which is never stored nor shown as final; the run ends `stopped` (`agent_end.stoppedBy`) with a closing
 *   message (stopReason `blocked`) saying why;
 * - a `rewrite` replaces the answer's text: `message_end` and the stored message carry the rewritten text (the deltas
 *   already streamed showed the original: render `message_end`'s);
 * - a check that throws is a `HookError` naming `output-guardrail:<name>`.
 *
 * @example
 * ```ts
 * outputGuardrail({ name: 'no-secrets', text: (text) => (text.includes('sk-') ? { trip: true, reason: 'a key' } : 'pass') })
 * ```
 */
export function outputGuardrail(options: OutputGuardrailOptions): Middleware {
  checkGuardrailOptions('outputGuardrail', options);
  const { name, timeoutMs = DEFAULT_GUARDRAIL_TIMEOUT_MS } = options;
  const inspect = inspectorOf('outputGuardrail', options);
  return {
    name: `output-guardrail:${name}`,
    phase: 'guard',
    ...(options.onError === undefined ? {} : { onError: options.onError }),
    wrapModelCall(request, ctx, next) {
      if (ctx.purpose !== undefined) return next(request);
      return next(request).pipe(
        concatMap((event): Observable<StreamEvent | ModelCallDecision> => {
          if (event.type !== 'done' || toolCallsOf(event.message).length > 0) return of(event);
          const message = event.message;
          const output: GuardrailOutput = { text: textOf(message), message, context: ctx };
          return runGuardrailCheck(name, ctx, timeoutMs, (context) => inspect(output, context)).pipe(
            concatMap((settled) => {
              const trip = tripOf(settled, timeoutMs);
              if (trip !== undefined) {
                emitGuardrailTrip(ctx, { guardrail: name, kind: 'output', action: 'stop', ...trip });
                return of(Decision.stop('stopped', `Guardrail ${name} tripped: ${trip.reason}`, name));
              }
              if (settled !== 'pass' && settled !== 'timeout' && 'rewrite' in settled) {
                const content = [
                  ...message.content.filter((block) => block.type !== 'text'),
                  { type: 'text' as const, text: settled.text },
                ];
                return of<StreamEvent>({ ...event, message: { ...message, content } });
              }
              return of(event);
            }),
          );
        }),
      );
    },
  };
}
