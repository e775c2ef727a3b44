/**
 * `inputGuardrail`: a check of a run's input, beside (or before) the run's first model call.
 * @module
 */
import { concatMap, Observable, of } from 'rxjs';
import type { Middleware } from '../middleware/types.js';
import type { HookContext } from '../middleware/hook-context.js';
import type { ModelCallContext, ModelCallDecision, ModelRequest } from '../middleware/wrapper-types.js';
import { Decision } from '../types/decision.js';
import { ConfigurationError } from '../types/errors.js';
import { textOf, type Message } from '../types/messages.js';
import type { StreamEvent } from '../types/stream-events.js';
import {
  checkGuardrailOptions,
  DEFAULT_GUARDRAIL_TIMEOUT_MS,
  emitGuardrailTrip,
  runGuardrailCheck,
  tripOf,
  type CheckSettled,
  type GuardrailAnswer,
} from './run-guardrail-check.js';
import type { TextCheck, TextCheckContext } from './verdict.js';

/** What an input guardrail inspects: the run's input (the user messages the first model call ends with). */
export interface GuardrailInput {
  /** The text of the input messages, joined by blank lines. */
  readonly text: string;
  /** The input messages (the trailing user messages of the first request). */
  readonly messages: readonly Message[];
  /** The run's hook context (read-only). */
  readonly context: HookContext;
}

/** Options of {@link inputGuardrail}: a `name` and either `text` (a {@link TextCheck}) or `inspect`. */
export interface InputGuardrailOptions {
  /** The guardrail's name: on `guardrail_tripped`, `agent_end.stoppedBy`, and (as `input-guardrail:<name>`) the chain. */
  readonly name: string;
  /** A check of the input's text (a built-in, e.g. `piiCheck()`). */
  readonly text?: TextCheck | undefined;
  /** A check of the whole input (used when `text` is absent). */
  readonly inspect?: ((input: GuardrailInput, context: TextCheckContext) => GuardrailAnswer) | undefined;
  /**
   * `parallel` (default): the check runs beside the first model call; the answer's deltas may stream meanwhile, but
   * its end (`message_end`, storage, tool calls) waits for the check. `blocking`: the model is called only after the
   * check passed (a `rewrite` then replaces the input's text in the request).
   */
  readonly mode?: 'parallel' | 'blocking' | undefined;
  /** How long the check may take (default 30 000 ms); past it the guardrail trips with reason `timeout`. */
  readonly timeoutMs?: number | undefined;
  /** What a throwing check does: `stop` (default, the run fails with a `HookError`) or `skip` (`hook_error`, pass). */
  readonly onError?: 'stop' | 'skip' | undefined;
}

/**
 * A guardrail on the run's input, as a {@link Middleware} (put it in `middleware: [...]`): on the run's first model
 * call (turn 0; not on side calls such as a compaction's) it checks the trailing user messages of the request.
 *
 * Contract (each rule proven in `marbles/guardrails.marble.test.ts`, see docs/guardrails.md):
 * - `parallel` (default): the model call starts at once, beside the check; text deltas may stream while the check is
 *   pending, but the call's end is held, so no `message_end`, no storage and no tool starts before the check settled.
 * - a trip (or a timeout) unsubscribes from the model call (its HTTP request is aborted), emits `guardrail_tripped`
 *   (`action: 'stop'`), retracts what was streamed (`message_retracted`) and ends the run `stopped` with
 *   `agent_end.stoppedBy = { by: name, reason }`.
 * - `blocking`: the model is not called before the check passed.
 * - a check that throws is a `HookError` naming `input-guardrail:<name>` (the run fails), never a pass.
 *
 * @example
 * ```ts
 * const agent = new Agent({ provider, model, middleware: [inputGuardrail({ name: 'pii', text: piiCheck() })] });
 * ```
 */
export function inputGuardrail(options: InputGuardrailOptions): Middleware {
  checkGuardrailOptions('inputGuardrail', options);
  const { name, mode = 'parallel', timeoutMs = DEFAULT_GUARDRAIL_TIMEOUT_MS } = options;
  if (mode !== 'parallel' && mode !== 'blocking') {
    throw new ConfigurationError(`inputGuardrail ${name}: mode must be 'parallel' or 'blocking'`);
  }
  const inspect = inspectorOf('inputGuardrail', options);
  return {
    name: `input-guardrail:${name}`,
    phase: 'guard',
    ...(options.onError === undefined ? {} : { onError: options.onError }),
    wrapModelCall(request, ctx, next) {
      if (ctx.purpose !== undefined || ctx.turnIndex !== 0) return next(request);
      const messages = trailingUserMessages(request.messages);
      if (messages.length === 0) return next(request);
      const input: GuardrailInput = { text: messages.map(textOf).join('\n\n'), messages, context: ctx };
      const check$ = runGuardrailCheck(name, ctx, timeoutMs, (context) => inspect(input, context));
      const stop = (settled: CheckSettled): ModelCallDecision | undefined => {
        const trip = tripOf(settled, timeoutMs);
        if (trip === undefined) return undefined;
        emitGuardrailTrip(ctx, { guardrail: name, kind: 'input', action: 'stop', ...trip });
        return Decision.stop('stopped', `Guardrail ${name} tripped: ${trip.reason}`, name);
      };
      if (mode === 'blocking') {
        return check$.pipe(
          concatMap((settled) => {
            const decision = stop(settled);
            if (decision !== undefined) return of(decision);
            return next(
              settled !== 'timeout' && settled !== 'pass' && 'rewrite' in settled
                ? rewritten(request, messages.length, settled.text)
                : request,
            );
          }),
        );
      }
      return beside(request, ctx, next, check$, stop);
    },
  };
}

/**
 * The model call and the check together: events pass as they come, except the call's terminal event, held until the
 * check settled; a trip unsubscribes from the call and answers with the stop.
 */
function beside(
  request: ModelRequest,
  _ctx: ModelCallContext,
  next: (request: ModelRequest) => Observable<StreamEvent>,
  check$: Observable<CheckSettled>,
  stop: (settled: CheckSettled) => ModelCallDecision | undefined,
): Observable<StreamEvent | ModelCallDecision> {
  return new Observable<StreamEvent | ModelCallDecision>((subscriber) => {
    let settled = false;
    let modelDone = false;
    const held: StreamEvent[] = [];
    const model = next(request).subscribe({
      next: (event) => {
        if (settled || (event.type !== 'done' && event.type !== 'error')) subscriber.next(event);
        else held.push(event);
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => {
        modelDone = true;
        if (settled) subscriber.complete();
      },
    });
    const check = check$.subscribe({
      next: (verdict) => {
        const decision = stop(verdict);
        if (decision !== undefined) {
          model.unsubscribe();
          subscriber.next(decision);
          subscriber.complete();
          return;
        }
        settled = true;
        for (const event of held.splice(0)) subscriber.next(event);
        if (modelDone) subscriber.complete();
      },
      error: (error: unknown) => subscriber.error(error),
    });
    return () => {
      check.unsubscribe();
      model.unsubscribe();
    };
  });
}

/** The user messages the request ends with (the run's input on its first call). */
function trailingUserMessages(messages: readonly Message[]): Message[] {
  let start = messages.length;
  while (start > 0 && messages[start - 1]!.role === 'user') start--;
  return messages.slice(start);
}

/** The request with its last `count` user messages replaced by one user message holding `text`. */
function rewritten(request: ModelRequest, count: number, text: string): ModelRequest {
  const kept = request.messages.slice(0, request.messages.length - count);
  const last = request.messages[request.messages.length - 1]!;
  return { ...request, messages: [...kept, { role: 'user', content: text, timestamp: last.timestamp }] };
}

/** The inspector a guardrail's options give: `text` over the subject's text, else `inspect`. */
export function inspectorOf<T extends { readonly text: string }>(
  factory: string,
  options: {
    readonly name: string;
    readonly text?: TextCheck | undefined;
    readonly inspect?: ((subject: T, context: TextCheckContext) => GuardrailAnswer) | undefined;
  },
): (subject: T, context: TextCheckContext) => GuardrailAnswer {
  const { text, inspect } = options;
  if (text !== undefined && typeof text !== 'function') {
    throw new ConfigurationError(`${factory} ${options.name}: text must be a TextCheck function`);
  }
  if (inspect !== undefined && typeof inspect !== 'function') {
    throw new ConfigurationError(`${factory} ${options.name}: inspect must be a function`);
  }
  if (text !== undefined) return (subject, context) => text(subject.text, context);
  if (inspect !== undefined) return inspect;
  throw new ConfigurationError(`${factory} ${options.name}: give text (a TextCheck) or inspect`);
}
