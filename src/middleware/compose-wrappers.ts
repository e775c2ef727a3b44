/**
 * Composing wrappers into an onion, ordered by phase, then order, then registration.
 * @module
 */
import { isObservable, Observable, tap } from 'rxjs';
import { isHookDecision, type HookDecision, type PauseDecision, type StopDecision } from '../types/decision.js';
import { ConfigurationError, HookError } from '../types/errors.js';
import { isList } from '../types/is-list.js';
import type { AssistantMessage } from '../types/messages.js';
import type { StreamEvent } from '../types/stream-events.js';
import { hashInput } from './hash-input.js';
import type { Middleware } from './types.js';
import {
  WRAPPER_PHASES,
  type ModelCallContext,
  type ModelCallNext,
  type ModelRequest,
  type NextCalls,
  type ToolCallContext,
  type ToolCallNext,
  type ToolCallRequest,
  type ToolOutcome,
  type WrapperPhase,
} from './wrapper-types.js';

/**
 * A wrapper's `pause` or `stop` decision on its way out of the onion: an error of the layers' Observables, passed
 * through every layer unchanged (never made a `HookError`), turned into the decision by whoever called the onion.
 */
export class WrapperDecision extends Error {
  constructor(readonly decision: PauseDecision | StopDecision) {
    super(`${decision.kind}: ${decision.reason}`);
    this.name = 'WrapperDecision';
  }
}

/** The two wrapper hooks. */
export type WrapperName = 'wrapModelCall' | 'wrapToolCall';

/** One layer of an onion, as described by `describeMiddleware()`. */
export interface WrapperLayer {
  readonly name: string;
  readonly phase: WrapperPhase;
  readonly order: number;
  readonly nextCalls: NextCalls;
  /** The middleware's declared `version`, when it has one. */
  readonly version?: string;
}

/** A composed model-call onion: `terminal` is the call itself. */
export type ComposedModelCall = (
  request: ModelRequest,
  ctx: ModelCallContext,
  terminal: ModelCallNext,
) => Observable<StreamEvent>;
/** A composed tool-call onion: `terminal` executes the tool. */
export type ComposedToolCall = (
  call: ToolCallRequest,
  ctx: ToolCallContext,
  terminal: ToolCallNext,
) => Observable<ToolOutcome>;

/** The onions of a middleware list, and their layers outermost first. */
export interface ComposedWrappers {
  readonly wrapModelCall?: ComposedModelCall | undefined;
  readonly wrapToolCall?: ComposedToolCall | undefined;
  readonly layers: { readonly [W in WrapperName]: readonly WrapperLayer[] };
}

/** Phases where two wrappers of the same call kind would fight: one cache, one retry policy, one adapter. */
const EXCLUSIVE_PHASES: ReadonlySet<WrapperPhase> = new Set(['cache', 'retry', 'adapter']);
/** Phases allowed to call `next` several times: inside tracing, so every attempt is observed. */
const MANY_PHASES: ReadonlySet<WrapperPhase> = new Set(['retry', 'adapter']);

interface Layer extends WrapperLayer {
  readonly call: (...args: unknown[]) => unknown;
}

/**
 * The names of a middleware list, as errors and descriptions show them: each one's `name`, else its class name, else
 * `middleware[i]`. Throws {@link ConfigurationError} when `middleware` is not an array, an entry is not an object, a
 * `name` is not a non-empty string, or two names are the same.
 */
export function middlewareNames(middleware: readonly Middleware[]): string[] {
  if (!isList(middleware)) throw new ConfigurationError('middleware must be an array');
  const names = middleware.map((m, index) => nameOf(m, index));
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) {
      throw new ConfigurationError(`two middlewares are named "${name}"; give one a distinct \`name\``);
    }
    seen.add(name);
  }
  return names;
}

function nameOf(middleware: Middleware, index: number): string {
  if (typeof middleware !== 'object' || middleware === null) {
    throw new ConfigurationError(`middleware[${index}] must be an object with hooks`);
  }
  if (middleware.name !== undefined) {
    if (typeof middleware.name !== 'string' || middleware.name === '') {
      throw new ConfigurationError(`middleware[${index}]: name must be a non-empty string`);
    }
    return middleware.name;
  }
  const prototype = Object.getPrototypeOf(middleware) as { constructor?: { name?: unknown } } | null;
  const className = prototype?.constructor?.name;
  return typeof className === 'string' && className !== '' && className !== 'Object'
    ? className
    : `middleware[${index}]`;
}

/**
 * Builds the model-call and tool-call onions of `middleware`, named by `names` (one per middleware, in the same
 * order). Without `names`, each layer is named as `composeMiddleware` names it (its `name`, else its class name, else
 * `middleware[i]`) and duplicate names are refused. Layers are sorted by phase
 * (`observe` outermost … `adapter` innermost), then by `order` (lower outer), then by registration (a stable sort).
 *
 * Throws {@link ConfigurationError} at construction for: a `middleware` entry that is not an object, `names` not one
 * non-empty string per middleware, an unknown phase, a non-numeric order, an invalid `nextCalls`, two wrappers of one
 * call kind in the same exclusive phase (`cache`, `retry`, `adapter`) at the same `order`, and a wrapper that calls `next` several times
 * outside the `retry`/`adapter` phases (a retry outside tracing would hide attempts).
 *
 * At run time each layer is checked against its declaration: calling `next` more often than `nextCalls` allows, or
 * completing without calling it when it declares `once`, fails with a `HookError` naming the wrapper, as does a
 * wrapper that throws, errors, or returns something other than an Observable.
 */
export function composeWrappers(middleware: readonly Middleware[], names?: readonly string[]): ComposedWrappers {
  if (names === undefined) {
    names = middlewareNames(middleware);
  } else if (
    !isList(middleware) ||
    !middleware.every((m) => typeof m === 'object' && m !== null) ||
    !isList(names) ||
    names.length !== middleware.length ||
    !names.every((name) => typeof name === 'string' && name !== '')
  ) {
    throw new ConfigurationError(
      'composeWrappers: `middleware` must be an array of objects, and `names` one non-empty string for each',
    );
  }
  const layerNames = names;
  const build = (kind: WrapperName): Layer[] => {
    const layers: (Layer & { index: number })[] = [];
    middleware.forEach((m, index) => {
      const fn = (m as Record<string, unknown>)[kind];
      if (fn === undefined) return;
      const name = layerNames[index]!;
      if (typeof fn !== 'function') throw new ConfigurationError(`middleware "${name}": ${kind} must be a function`);
      const phase = m.phase ?? 'context';
      if (!WRAPPER_PHASES.includes(phase)) {
        throw new ConfigurationError(
          `middleware "${name}": unknown phase ${JSON.stringify(phase)} (one of ${WRAPPER_PHASES.join(', ')})`,
        );
      }
      const order = m.order ?? 0;
      if (typeof order !== 'number' || !Number.isFinite(order))
        throw new ConfigurationError(`middleware "${name}": order must be a finite number`);
      const declared =
        typeof m.nextCalls === 'object' ? m.nextCalls[kind === 'wrapModelCall' ? 'model' : 'tool'] : m.nextCalls;
      const nextCalls = declared ?? 'once';
      if (nextCalls !== 'once' && nextCalls !== 'at-most-once' && nextCalls !== 'many') {
        throw new ConfigurationError(`middleware "${name}": nextCalls must be "once", "at-most-once" or "many"`);
      }
      if (nextCalls === 'many' && !MANY_PHASES.has(phase)) {
        throw new ConfigurationError(
          `middleware "${name}": its ${kind} calls next several times (nextCalls "many"), so it must sit inside tracing, ` +
            `in phase "retry" or "adapter" (it has phase "${phase}")`,
        );
      }
      const version = typeof m.version === 'string' && m.version !== '' ? m.version : undefined;
      layers.push({
        name,
        phase,
        order,
        nextCalls,
        index,
        call: fn.bind(m) as (...args: unknown[]) => unknown,
        ...(version !== undefined ? { version } : {}),
      });
    });
    layers.sort(
      (a, b) =>
        WRAPPER_PHASES.indexOf(a.phase) - WRAPPER_PHASES.indexOf(b.phase) || a.order - b.order || a.index - b.index,
    );
    for (let i = 1; i < layers.length; i++) {
      const [before, layer] = [layers[i - 1]!, layers[i]!];
      // Two layers that declare different orders say how they nest (Compaction's overflow recovery, order -1, sits
      // outside a retry policy): only two in the same slot at the same order would fight.
      if (layer.phase === before.phase && layer.order === before.order && EXCLUSIVE_PHASES.has(layer.phase)) {
        throw new ConfigurationError(
          `middlewares "${before.name}" and "${layer.name}" both claim the exclusive "${layer.phase}" slot of ${kind}; keep one`,
        );
      }
    }
    return layers;
  };

  const model = build('wrapModelCall');
  const tool = build('wrapToolCall');
  const describe = (layers: Layer[]): WrapperLayer[] =>
    layers.map(({ name, phase, order, nextCalls, version }) =>
      version === undefined ? { name, phase, order, nextCalls } : { name, phase, order, nextCalls, version },
    );
  return {
    ...(model.length > 0
      ? { wrapModelCall: onion<ModelRequest, StreamEvent, ModelCallContext>(model, 'wrapModelCall') }
      : {}),
    ...(tool.length > 0
      ? { wrapToolCall: onion<ToolCallRequest, ToolOutcome, ToolCallContext>(tool, 'wrapToolCall') }
      : {}),
    layers: { wrapModelCall: describe(model), wrapToolCall: describe(tool) },
  };
}

/** The onion: layer 0 is outermost; the terminal `next` is the call itself. */
function onion<TRequest, TValue, TContext>(layers: readonly Layer[], kind: WrapperName) {
  return (
    request: TRequest,
    ctx: TContext,
    terminal: (request: TRequest) => Observable<TValue>,
  ): Observable<TValue> => {
    const at = (depth: number, current: TRequest): Observable<TValue> =>
      depth === layers.length
        ? terminal(current)
        : layer(layers[depth]!, kind, current, ctx, (next) => at(depth + 1, next));
    return at(0, request);
  };
}

/** One layer, checked against its declaration; its failures become a HookError naming it. */
function layer<TRequest, TValue, TContext>(
  wrapper: Layer,
  kind: WrapperName,
  request: TRequest,
  ctx: TContext,
  next: (request: TRequest) => Observable<TValue>,
): Observable<TValue> {
  const fail = (cause: unknown) =>
    cause instanceof HookError || cause instanceof WrapperDecision
      ? cause
      : new HookError({
          middleware: wrapper.name,
          hook: kind,
          phase: wrapper.phase,
          inputHash: hashInput(describeInput(kind, request)),
          cause,
        });
  // The wrapper is called at subscription. What it returns is subscribed through `tap` (only for "once": completing
  // without calling `next` is an error) and one observer of our own (a decision converted, a failure made a HookError
  // naming this layer): at most two subscribers per layer on every event of the call, and on every call no more than
  // that (the completion check used to be a `concatWith`, whose merge machinery was set up on every call: see
  // "Wrapper cost" in bench/RESULTS.md).
  return new Observable<TValue>((subscriber) => {
    let calls = 0;
    const limit = wrapper.nextCalls === 'many' ? Infinity : 1;
    const countedNext = (nextRequest: TRequest): Observable<TValue> => {
      if (++calls > limit) {
        throw fail(new Error(`called next ${calls} times but declares nextCalls "${wrapper.nextCalls}"`));
      }
      return next(nextRequest);
    };
    let output: unknown;
    try {
      output = wrapper.call(request, ctx, countedNext);
      if (!isObservable(output))
        throw new TypeError(`${kind} must return an Observable, got ${output === null ? 'null' : typeof output}`);
    } catch (error) {
      subscriber.error(fail(error));
      return undefined;
    }
    const checked =
      wrapper.nextCalls === 'once'
        ? (output as Observable<TValue>).pipe(
            tap({
              // Thrown in `tap`, an error is sent on as the stream's error (then named by the error handler below).
              complete: () => {
                if (calls === 0) throw new Error('completed without calling next but declares nextCalls "once"');
              },
            }),
          )
        : (output as Observable<TValue>);
    // A decision emitted by the layer is converted here, so the layer outside sees what `next` promises: a `replace`
    // becomes the value it stands for, a `pause` or `stop` an error passed through to the onion's caller. Failures
    // become a HookError naming this layer.
    return checked.subscribe({
      next: (value) => {
        if (!isHookDecision(value)) {
          subscriber.next(value);
          return;
        }
        try {
          const converted = fromDecision(kind, value);
          if (converted instanceof WrapperDecision) subscriber.error(converted);
          else for (const item of converted) subscriber.next(item as TValue);
        } catch (error) {
          subscriber.error(fail(error));
        }
      },
      error: (error: unknown) => subscriber.error(fail(error)),
      complete: () => subscriber.complete(),
    });
  });
}

/** What a wrapper's decision stands for, to the layers outside (see the wrapper hooks' contracts). */
function fromDecision(kind: WrapperName, decision: HookDecision<unknown>): readonly unknown[] | WrapperDecision {
  switch (decision.kind) {
    case 'stop':
      return new WrapperDecision(decision);
    case 'pause':
      if (kind === 'wrapToolCall') return new WrapperDecision(decision);
      throw new TypeError('wrapModelCall answered pause: a model call cannot be paused (approvals are per tool call)');
    case 'replace': {
      if (kind === 'wrapToolCall') {
        const result = decision.value as { isError?: unknown };
        const isError = typeof result === 'object' && result !== null && result.isError === true;
        return [{ result: decision.value, isError, outcome: isError ? 'error' : 'ok' }];
      }
      const message = decision.value as AssistantMessage;
      if (
        typeof message !== 'object' ||
        message === null ||
        message.role !== 'assistant' ||
        !Array.isArray(message.content)
      ) {
        throw new TypeError('wrapModelCall answered replace with something that is not an assistant message');
      }
      const failed = message.stopReason === 'error' || message.stopReason === 'aborted';
      return [
        { type: 'start', partial: message },
        failed
          ? {
              type: 'error',
              message,
              errorKind: message.errorKind ?? (message.stopReason === 'aborted' ? 'aborted' : 'unknown'),
            }
          : { type: 'done', message },
      ];
    }
    case 'continue':
      throw new TypeError(
        `${kind} answered continue: a wrapper answers with ${kind === 'wrapToolCall' ? 'an outcome' : 'stream events'}, or replace${kind === 'wrapToolCall' ? ', pause' : ''} or stop`,
      );
  }
}

/** What a wrapper failure's hash is computed from: the request without its provider or tool objects. */
function describeInput(kind: WrapperName, request: unknown): unknown {
  if (kind === 'wrapModelCall') {
    const { model, messages, systemPrompt } = request as ModelRequest;
    return { model: model.id, messages, systemPrompt };
  }
  const { toolCall, args } = request as ToolCallRequest;
  return { toolCall, args };
}
