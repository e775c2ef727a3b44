// Property: each composition rule is written once (issue 16). composeMiddleware's composed hooks fold a rule
// synchronously while hooks answer plain values and hand over to the rule's operator at the first Promise or
// Observable; the public operators (chainHooks, lastHookWins, gateToolCall, mergeToolResults, stopWhenAny,
// mergeTurnActions) fold the same rule from the start. Driven with the same random hook lists, the two must give the
// same result — or fail on the same hook with the same error — after calling the same hooks with the same inputs
// (an early stop calls no later hook), and the composed hook must stay synchronous exactly when every hook it called
// answered with a plain value.
//
// Each hook list is 0–6 hooks long; each hook answers with a plain value, a Promise, or an Observable (synchronous or
// not, empty, or with several values of which the last counts), or fails (throws, rejects, errors). The answers
// depend on what the hook is given, so a chain that skipped or reordered a hook would show.
//
// Cases per run (seeded, reproducible; a failure prints its seed and the shrunk hook list): 1,500 per hook, 10,500 in
// all, in two to four seconds here. (node:assert rather than expect: it is several times cheaper per case.)
import fc from 'fast-check';
import { from, isObservable, lastValueFrom, Observable, toArray, type ObservableInput } from 'rxjs';
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import {
  composeMiddleware,
  EMPTY_STATE,
  EMPTY_USAGE,
  HookError,
  textOf,
  type AfterToolCallContext,
  type AfterToolCallResult,
  type AgentHooks,
  type ComposedHooks,
  type AssistantMessage,
  type BeforeToolCallContext,
  type BeforeToolCallResult,
  type HookContext,
  type Message,
  type Middleware,
  type TurnAction,
  type TurnDecision,
  type TurnEndContext,
} from 'cubepi';
import {
  chainHooks,
  gateToolCall,
  lastHookWins,
  mergeToolResults,
  mergeTurnActions,
  stopWhenAny,
} from 'cubepi/operators';

const RUNS = 1_500;

// ---- how a hook answers ------------------------------------------------------------------------------------------

type Timing = 'plain' | 'promise' | 'sync$' | 'async$' | 'throw' | 'reject' | 'error$';
const ASYNC: ReadonlySet<Timing> = new Set(['promise', 'sync$', 'async$', 'reject', 'error$']);

/** One hook: how it answers, and recipes for its values (realised from what it is given, when it is called). */
interface HookSpec<R> {
  readonly timing: Timing;
  readonly recipes: readonly R[];
}

/** A recipe for a value (of a rule's answer type), realised from the hook's index, the value's index and its input. */
type Realise<R, TInput, TAnswer> = (recipe: R, hook: number, value: number, input: TInput) => TAnswer;

function hookSpec<R>(recipe: fc.Arbitrary<R>): fc.Arbitrary<HookSpec<R>> {
  const one = fc.tuple(recipe);
  const some = fc.array(recipe, { maxLength: 3 }); // 0: an empty Observable; 2–3: the last counts
  const spec = (timing: fc.Arbitrary<Timing>, recipes: fc.Arbitrary<readonly R[]>) => fc.record({ timing, recipes });
  return fc.oneof(
    { weight: 6, arbitrary: spec(fc.constant('plain'), one) },
    { weight: 4, arbitrary: spec(fc.constant('promise'), one) },
    { weight: 4, arbitrary: spec(fc.constantFrom('sync$', 'async$'), some) },
    { weight: 1, arbitrary: spec(fc.constantFrom('throw', 'reject', 'error$'), some) },
  );
}

/** The hooks of a list, each with its position (its middleware is `m<i>`). */
interface Hook<R> {
  readonly i: number;
  readonly spec: HookSpec<R>;
}

/** What a hook answered, as a hook may: a value, a Promise, an Observable, or a throw. */
function answer<R, TInput, TAnswer>(hook: Hook<R>, input: TInput, realise: Realise<R, TInput, TAnswer>): unknown {
  const { i, spec } = hook;
  const values = spec.recipes.map((recipe, j) => realise(recipe, i, j, input));
  const failure = new Error(`m${i} failed`);
  switch (spec.timing) {
    case 'plain':
      return values[0];
    case 'promise':
      return Promise.resolve(values[0]);
    case 'sync$':
      return new Observable<TAnswer>((subscriber) => {
        for (const value of values) subscriber.next(value);
        subscriber.complete();
      });
    case 'async$':
      return later$(values);
    case 'throw':
      throw failure;
    case 'reject':
      return Promise.reject(failure);
    case 'error$':
      return later$(values, failure);
  }
}

/** The values one microtask later, then completion (or `failure`); unsubscribing cancels. */
function later$<T>(values: readonly T[], failure?: Error): Observable<T> {
  return new Observable<T>((subscriber) => {
    let cancelled = false;
    void Promise.resolve().then(() => {
      if (cancelled) return;
      for (const value of values) subscriber.next(value);
      if (failure === undefined) subscriber.complete();
      else subscriber.error(failure);
    });
    return () => (cancelled = true);
  });
}

/** The answer as the operators take it (`ObservableInput`): a plain value becomes a one-value array. */
function asInput<T>(answered: unknown, spec: HookSpec<unknown>): ObservableInput<T> {
  return (spec.timing === 'plain' ? [answered] : answered) as ObservableInput<T>;
}

// ---- running both ways ---------------------------------------------------------------------------------------------

/** How a run ended: its one value, or the failing hook's error message. */
type Outcome = { readonly value: unknown } | { readonly failed: string };
/** Which hooks were called, in order, with what they were given (chained rules). */
type Calls = { i: number; input?: unknown }[];

interface Driven {
  readonly outcome: Outcome;
  readonly calls: Calls;
  /** Whether the composed hook answered synchronously (not an Observable). */
  readonly sync?: boolean;
}

/** Subscribes once and expects exactly one value or an error. */
async function settle(source: Observable<unknown>, toFailure: (error: unknown) => string): Promise<Outcome> {
  try {
    const values = await lastValueFrom(source.pipe(toArray()));
    assert.equal(values.length, 1, 'one value');
    return { value: values[0] };
  } catch (error) {
    return { failed: toFailure(error) };
  }
}

/** The composed hook's failure: a HookError naming the middleware whose hook failed, and its cause. */
function hookFailure(hook: keyof AgentHooks) {
  return (error: unknown): string => {
    assert.ok(error instanceof HookError, `a HookError, not ${String(error)}`);
    assert.equal(error.hook, hook);
    const message = (error.cause as Error).message;
    assert.equal(message, `${error.middleware} failed`, 'the HookError names the middleware whose hook failed');
    return message;
  };
}

const operatorFailure = (error: unknown): string => (error as Error).message;

interface RuleCase<R, TInput, TAnswer> {
  readonly hook: keyof AgentHooks;
  readonly seed: number;
  readonly recipe: fc.Arbitrary<R>;
  readonly realise: Realise<R, TInput, TAnswer>;
  /** Whether a hook is given the accumulated value (chained rules): its calls record their inputs. */
  readonly chained: boolean;
  /** Calls the composed hook. */
  readonly callComposed: (hooks: ComposedHooks) => unknown;
  /** The rule's public operator over the hooks, `invoke` answering for one. */
  readonly operator: (
    hooks: Observable<Hook<R>>,
    invoke: (hook: Hook<R>, input?: TInput) => unknown,
  ) => Observable<unknown>;
  /** The outcome with no hook at all (the composed hook is then not wired). */
  readonly none: unknown;
  /** The composed hook's value as the operator gives it (afterModelResponse: a TurnAction from the merged action). */
  readonly fromOperator?: (value: unknown) => unknown;
}

async function viaComposed<R, TInput, TAnswer>(
  rule: RuleCase<R, TInput, TAnswer>,
  hooks: readonly Hook<R>[],
): Promise<Driven> {
  const calls: Calls = [];
  const middleware = hooks.map((hook): Middleware => ({
    name: `m${hook.i}`,
    [rule.hook]: (first: unknown) => {
      calls.push(rule.chained ? { i: hook.i, input: first } : { i: hook.i });
      return answer(hook, first as TInput, rule.realise);
    },
  }));
  const composed = composeMiddleware(middleware).hooks;
  if (hooks.length === 0) {
    assert.equal(composed[rule.hook], undefined, 'no hook, nothing wired');
    return { outcome: { value: rule.none }, calls, sync: true };
  }
  let answered: unknown;
  try {
    answered = rule.callComposed(composed);
  } catch (error) {
    return { outcome: { failed: hookFailure(rule.hook)(error) }, calls, sync: true };
  }
  if (!isObservable(answered)) return { outcome: { value: answered }, calls, sync: true };
  return { outcome: await settle(answered, hookFailure(rule.hook)), calls, sync: false };
}

async function viaOperator<R, TInput, TAnswer>(
  rule: RuleCase<R, TInput, TAnswer>,
  hooks: readonly Hook<R>[],
): Promise<Driven> {
  const calls: Calls = [];
  const result$ = rule.operator(from(hooks), (hook, input) => {
    calls.push(rule.chained ? { i: hook.i, input } : { i: hook.i });
    return asInput(answer(hook, input as TInput, rule.realise), hook.spec);
  });
  const outcome = await settle(result$, operatorFailure);
  return {
    outcome: 'value' in outcome && rule.fromOperator ? { value: rule.fromOperator(outcome.value) } : outcome,
    calls,
  };
}

function holdsTogether<R, TInput, TAnswer>(rule: RuleCase<R, TInput, TAnswer>): Promise<void> {
  const lists = fc
    .array(hookSpec(rule.recipe), { maxLength: 6 })
    .map((specs) => specs.map((spec, i): Hook<R> => ({ i, spec })));
  return fc.assert(
    fc.asyncProperty(lists, async (hooks) => {
      const composed = await viaComposed(rule, hooks);
      const operator = await viaOperator(rule, hooks);
      assert.deepEqual(composed.outcome, operator.outcome, 'the same result');
      assert.deepEqual(composed.calls, operator.calls, 'the same hooks called, with the same inputs');
      // The fast path: synchronous exactly when every hook it called answered with a plain value (or threw).
      const waited = composed.calls.some(({ i }) => ASYNC.has(hooks[i]!.spec.timing));
      assert.equal(composed.sync, !waited, 'synchronous exactly when no called hook answered asynchronously');
    }),
    { seed: rule.seed, numRuns: RUNS },
  );
}

// ---- the rules -----------------------------------------------------------------------------------------------------

const msg = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }], timestamp: 0 });
const reply = (text: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  stopReason: 'stop',
  usage: EMPTY_USAGE,
  provider: 'p',
  model: 'm',
  timestamp: 0,
});

const ctx: HookContext = {
  runId: 'run',
  turnIndex: 0,
  model: { id: 'm', provider: 'p' },
  systemPrompt: 'base',
  tools: [],
  messages: [],
  state: EMPTY_STATE,
  extra: {},
  signal: new AbortController().signal,
};
const assistantMessage = reply('calling a tool');
const toolCall = { type: 'toolCall' as const, id: 'c1', name: 'search', arguments: { q: 'x' } };
const beforeCtx: BeforeToolCallContext = { ...ctx, assistantMessage, toolCall, args: { q: 'x' }, context: ctx };
const afterCtx: AfterToolCallContext = {
  ...beforeCtx,
  result: { content: [{ type: 'text', text: 'found' }] },
  isError: false,
};
const turnEndCtx: TurnEndContext = {
  ...ctx,
  message: assistantMessage,
  toolResults: [],
  newMessages: [],
  context: ctx,
};

const seedMessages = [msg('q1'), msg('a1'), msg('q2')];
const nothing = fc.constantFrom(undefined, null);

/** Message-list transforms: nothing, or a list built from the input (so a skipped or reordered hook shows). */
const messagesRecipe = fc.oneof(nothing, fc.constantFrom('append' as const, 'drop' as const));
const realiseMessages: Realise<'append' | 'drop' | null | undefined, Message[], Message[] | null | undefined> = (
  recipe,
  i,
  j,
  input,
) => (recipe === 'append' ? [...input, msg(`m${i}.${j}`)] : recipe === 'drop' ? input.slice(1) : recipe);

const chainedMessages = (hook: 'transformContext' | 'convertToLlm', seed: number) =>
  ({
    hook,
    seed,
    recipe: messagesRecipe,
    realise: realiseMessages,
    chained: true,
    callComposed: (hooks) => hooks[hook]!(seedMessages, ctx),
    operator:
      hook === 'transformContext'
        ? (hooks, invoke) =>
            hooks.pipe(chainHooks(seedMessages, (h, input) => invoke(h, input) as ObservableInput<Message[]>))
        : (hooks, invoke) =>
            hooks.pipe(lastHookWins(seedMessages, (h, input) => invoke(h, input) as ObservableInput<Message[]>)),
    none: seedMessages,
  }) satisfies RuleCase<'append' | 'drop' | null | undefined, Message[], Message[] | null | undefined>;

describe('each composition rule holds together: composeMiddleware (fast path + hand-over) and its operator', () => {
  it('transformContext: chained (chainHooks)', () => holdsTogether(chainedMessages('transformContext', 1601)));

  it('convertToLlm: last wins (lastHookWins)', () => holdsTogether(chainedMessages('convertToLlm', 1602)));

  it('transformSystemPrompt: chained (chainHooks)', () =>
    holdsTogether<'append' | 'replace' | null | undefined, string, string | null | undefined>({
      hook: 'transformSystemPrompt',
      seed: 1603,
      recipe: fc.oneof(nothing, fc.constantFrom('append' as const, 'replace' as const)),
      realise: (recipe, i, j, input) =>
        recipe === 'append' ? `${input}|m${i}.${j}` : recipe === 'replace' ? `m${i}.${j}` : recipe,
      chained: true,
      callComposed: (hooks) => hooks.transformSystemPrompt!('base', ctx),
      operator: (hooks, invoke) =>
        hooks.pipe(chainHooks('base', (h, input) => invoke(h, input) as ObservableInput<string>)),
      none: 'base',
    }));

  it('beforeToolCall: the first block wins (gateToolCall)', () =>
    holdsTogether<BeforeToolCallResult | null | undefined, undefined, BeforeToolCallResult | null | undefined>({
      hook: 'beforeToolCall',
      seed: 1604,
      recipe: fc.oneof(
        nothing,
        fc.constantFrom<BeforeToolCallResult>({}, { block: false }, { block: true }, { block: false, reason: 'fine' }),
        fc.string({ maxLength: 6 }).map((reason): BeforeToolCallResult => ({ block: true, reason })),
      ),
      realise: (recipe) => recipe,
      chained: false,
      callComposed: (hooks) => hooks.beforeToolCall!(beforeCtx),
      operator: (hooks, invoke) =>
        hooks.pipe(gateToolCall((h) => invoke(h) as ObservableInput<BeforeToolCallResult | undefined>)),
      none: undefined,
    }));

  it('afterToolCall: field-wise merge (mergeToolResults)', () =>
    holdsTogether<AfterToolCallResult | null | undefined, undefined, AfterToolCallResult | null | undefined>({
      hook: 'afterToolCall',
      seed: 1605,
      recipe: fc.oneof(
        nothing,
        fc.record(
          {
            content: fc.option(
              fc.string({ maxLength: 4 }).map((text) => [{ type: 'text' as const, text }]),
              { nil: undefined },
            ),
            details: fc.option(
              fc.integer({ min: 0, max: 9 }).map((n) => ({ n })),
              { nil: undefined },
            ),
            isError: fc.option(fc.boolean(), { nil: undefined }),
            terminate: fc.option(fc.boolean(), { nil: undefined }),
          },
          { requiredKeys: [] },
        ),
      ),
      realise: (recipe) => recipe,
      chained: false,
      callComposed: (hooks) => hooks.afterToolCall!(afterCtx),
      operator: (hooks, invoke) =>
        hooks.pipe(mergeToolResults((h) => invoke(h) as ObservableInput<AfterToolCallResult | undefined>)),
      none: {},
    }));

  it('shouldStopAfterTurn: any true stops (stopWhenAny)', () =>
    holdsTogether<boolean | null | undefined, undefined, boolean | null | undefined>({
      hook: 'shouldStopAfterTurn',
      seed: 1606,
      recipe: fc.constantFrom(undefined, null, true, false),
      realise: (recipe) => recipe,
      chained: false,
      callComposed: (hooks) => hooks.shouldStopAfterTurn!(turnEndCtx),
      operator: (hooks, invoke) => hooks.pipe(stopWhenAny((h) => invoke(h) as ObservableInput<boolean | undefined>)),
      none: false,
    }));

  interface ActionRecipe {
    readonly respond?: boolean;
    readonly inject?: number;
    readonly decision?: TurnDecision;
  }
  const response = reply('draft');
  it('afterModelResponse: chained merge, the last decision wins (mergeTurnActions)', () =>
    holdsTogether<ActionRecipe | null | undefined, AssistantMessage, TurnAction | null | undefined>({
      hook: 'afterModelResponse',
      seed: 1607,
      recipe: fc.oneof(
        nothing,
        fc.record(
          {
            respond: fc.boolean(),
            inject: fc.integer({ min: 0, max: 2 }),
            decision: fc.constantFrom<TurnDecision>('natural', 'stop', 'loop_to_model'),
          },
          { requiredKeys: [] },
        ),
      ),
      realise: (recipe, i, j, current) => {
        if (recipe === undefined || recipe === null) return recipe;
        const action: { -readonly [K in keyof TurnAction]: TurnAction[K] } = {};
        if (recipe.respond === true) action.response = reply(`${textOf(current)}>m${i}.${j}`);
        if (recipe.inject !== undefined) {
          action.injectMessages = Array.from({ length: recipe.inject }, (_, k) => msg(`m${i}.${j}.${k}`));
        }
        if (recipe.decision !== undefined) action.decision = recipe.decision;
        return action;
      },
      chained: true,
      callComposed: (hooks) => hooks.afterModelResponse!(response, ctx),
      operator: (hooks, invoke) =>
        hooks.pipe(
          mergeTurnActions<Hook<ActionRecipe | null | undefined>, AssistantMessage, Message, TurnDecision>(
            response,
            'natural',
            (h, current) => invoke(h, current) as ObservableInput<TurnAction | undefined>,
          ),
        ),
      // No hook: the loop keeps the response, injects nothing and decides nothing.
      none: { response, injectMessages: [] },
      fromOperator: (value) => {
        const { decision, ...rest } = value as TurnAction;
        return decision === undefined ? rest : { ...rest, decision };
      },
    }));
});
