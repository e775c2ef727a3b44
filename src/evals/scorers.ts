/**
 * Scorers: observe-only middleware that watch one case's run and score it at the end. Pure (no `node:` import).
 * @module
 */
import { firstValueFrom, last } from 'rxjs';
import type { Middleware, RunEndContext } from '../middleware/types.js';
import type { AssistantMessage, Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { EvalCase, ExpectedToolCall } from './dataset.js';

/** A scorer's verdict on one case: a score in [0, 1], whether it passes, and a measured value where there is one. */
export interface ScoreResult {
  readonly score: number;
  readonly pass: boolean;
  /** What was measured (tokens, turns, ms, cost), for the metric scorers. */
  readonly value?: number | undefined;
  /** JSON-serialisable detail: why it failed, what was seen. */
  readonly details?: unknown;
}

/** What a scorer's observer knows about the run beyond its own hooks. */
export interface ScorerEnv {
  /** The eval's clock in ms: virtual (the `TestScheduler`'s frame) in replay, the wall clock live. */
  now(): number;
}

/**
 * One case's observer: an observe-only {@link Middleware} (`observeOnly: true`; its hooks answer nothing) that
 * records what it needs, and `score()`, called once after the run ends.
 */
export interface ScorerObserver extends Middleware {
  readonly observeOnly: true;
  score(): ScoreResult | PromiseLike<ScoreResult>;
}

/**
 * A scorer: a `name` unique in the eval, and `observe(case, env)` that builds a fresh observer for each case. A
 * throw from `observe`, from one of the observer's hooks or from `score` is a `ScorerError` on that case's result
 * for this scorer (named); the run and the rest of the eval go on.
 */
export interface Scorer {
  readonly name: string;
  observe(evalCase: EvalCase, env: ScorerEnv): ScorerObserver;
}

/** The text of the run's final assistant message (its text blocks joined), or `undefined` if it has none. */
export function finalText(messages: readonly Message[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    return m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
  }
  return undefined;
}

/** An observer that keeps the run's new messages (from `onRunEnd`) and scores them with `score`. */
function outcomeObserver(
  name: string,
  score: (messages: readonly Message[]) => ScoreResult | PromiseLike<ScoreResult>,
) {
  let seen: readonly Message[] = [];
  const observer: ScorerObserver = {
    name: `score:${name}`,
    observeOnly: true,
    onRunEnd(ctx: RunEndContext) {
      seen = ctx.newMessages;
      return undefined;
    },
    score: () => score(seen),
  };
  return observer;
}

const binary = (pass: boolean, details?: unknown): ScoreResult => ({ score: pass ? 1 : 0, pass, details });

/** Options of {@link exact}. */
export interface ExactOptions {
  /** Compare after trimming whitespace at both ends (default `true`). */
  readonly trim?: boolean | undefined;
  /** Compare case-insensitively (default `false`). */
  readonly ignoreCase?: boolean | undefined;
}

/** Outcome: the final answer's text equals `expected.output` (a case without it is a `ScorerError`). */
export function exact(options: ExactOptions = {}): Scorer {
  const norm = (s: string) => {
    const t = options.trim === false ? s : s.trim();
    return options.ignoreCase === true ? t.toLowerCase() : t;
  };
  return {
    name: 'exact',
    observe: (evalCase) =>
      outcomeObserver('exact', (messages) => {
        const want = evalCase.expected?.output;
        if (typeof want !== 'string') throw new TypeError('the case has no expected.output');
        const got = finalText(messages) ?? '';
        return binary(norm(got) === norm(want), norm(got) === norm(want) ? undefined : { got, want });
      }),
  };
}

/** What {@link schema} needs of a schema: zod's `safeParse`. */
export interface SafeParser {
  safeParse(value: unknown): { success: boolean; error?: { issues?: readonly unknown[] } };
}

/**
 * Outcome: the final answer, parsed as JSON (a Markdown code fence around it is allowed), satisfies `zodSchema` (or,
 * without it, the case's `expected.schema`, which must then be a zod schema; neither is a `ScorerError`).
 */
export function schema(zodSchema?: SafeParser): Scorer {
  return {
    name: 'schema',
    observe: (evalCase) =>
      outcomeObserver('schema', (messages) => {
        const parser = zodSchema ?? (evalCase.expected?.schema as SafeParser | undefined);
        if (typeof parser?.safeParse !== 'function') throw new TypeError('no zod schema (option or expected.schema)');
        const text = (finalText(messages) ?? '').trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/, '$1');
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          return binary(false, { reason: 'the answer is not JSON' });
        }
        const parsed = parser.safeParse(value);
        return binary(parsed.success, parsed.success ? undefined : { issues: parsed.error?.issues });
      }),
  };
}

/**
 * The grader's prompt, fixed so a grade means the same thing from run to run: `{input}`, `{expected}` and `{output}`
 * are replaced; the grader answers one JSON object `{"score": <0..1>, "reason": "<why>"}`.
 */
export const GRADER_PROMPT = `You are grading the answer of an AI assistant.

Question:
{input}

Reference answer or rubric:
{expected}

Assistant's answer:
{output}

Grade how well the answer satisfies the reference: 1 fully, 0 not at all, in between for partly.
Reply with one JSON object and nothing else: {"score": <number from 0 to 1>, "reason": "<one sentence>"}`;

/** Options of {@link modelGraded}. */
export interface ModelGradedOptions {
  /** The grader's provider and model (a `FauxProvider` in replay, so the grade is replayed too). */
  readonly provider: Provider;
  readonly model: Model;
  /** The prompt; {@link GRADER_PROMPT} by default. */
  readonly prompt?: string | undefined;
  /** The lowest score that passes; 0.5 by default. */
  readonly passAt?: number | undefined;
  /** The scorer's name; `modelGraded` by default. */
  readonly name?: string | undefined;
}

/** Fills {@link GRADER_PROMPT} (or `template`) for one case. */
export function graderPrompt(evalCase: EvalCase, output: string, template: string = GRADER_PROMPT): string {
  const input =
    typeof evalCase.input === 'string'
      ? evalCase.input
      : JSON.stringify(Array.isArray(evalCase.input) ? evalCase.input : [evalCase.input]);
  const expected = evalCase.expected?.output ?? JSON.stringify(evalCase.expected?.rubric ?? evalCase.expected ?? {});
  return template
    .replaceAll('{input}', input)
    .replaceAll('{expected}', String(expected))
    .replaceAll('{output}', output);
}

/**
 * Outcome, model-graded: sends the filled {@link GRADER_PROMPT} to `model` and reads its `{"score", "reason"}`. A
 * grader that fails (an error message, no JSON, a score outside [0, 1]) is a `ScorerError` on the case.
 */
export function modelGraded(options: ModelGradedOptions): Scorer {
  const name = options.name ?? 'modelGraded';
  const passAt = options.passAt ?? 0.5;
  return {
    name,
    observe: (evalCase) =>
      outcomeObserver(name, async (messages) => {
        const prompt = graderPrompt(evalCase, finalText(messages) ?? '', options.prompt);
        const user: Message = { role: 'user', content: prompt, timestamp: 0 };
        const end = await firstValueFrom(options.provider.stream(options.model, [user]).pipe(last(null, undefined)), {
          defaultValue: undefined,
        });
        if (end === undefined) throw new Error('the grader sent nothing');
        if (end.type !== 'done') {
          const message = (end as { message?: AssistantMessage }).message;
          throw new Error(`the grader failed: ${message?.errorMessage ?? end.type}`);
        }
        const text = finalText([end.message]) ?? '';
        const match = /\{[\s\S]*\}/.exec(text);
        let grade: { score?: unknown; reason?: unknown };
        try {
          grade = JSON.parse(match?.[0] ?? '') as typeof grade;
        } catch {
          throw new Error(`the grader's answer is not a JSON grade: ${JSON.stringify(text.slice(0, 200))}`);
        }
        const score = grade.score;
        if (typeof score !== 'number' || !(score >= 0 && score <= 1))
          throw new Error(`the grader's score is not a number in [0, 1]: ${JSON.stringify(score)}`);
        return { score, pass: score >= passAt, details: { reason: grade.reason } };
      }),
  };
}

/** Options of {@link trajectory}. */
export interface TrajectoryOptions {
  /**
   * `exact` (default): the run's tool calls are the expected ones, no more, in order. `subset`: the expected calls
   * appear in order among the run's (others may come between); the score is the fraction found.
   */
  readonly mode?: 'exact' | 'subset' | undefined;
  /** How arguments match: `subset` (default: the expected keys, deep-equal) or `exact` (deep-equal objects). */
  readonly args?: 'subset' | 'exact' | undefined;
}

/** The tool calls of the run's model responses, in order (what `afterModelResponse` saw). */
function toolCallObserver(
  name: string,
  score: (calls: readonly { name: string; arguments: Record<string, unknown> }[]) => ScoreResult,
): ScorerObserver {
  const calls: { name: string; arguments: Record<string, unknown> }[] = [];
  return {
    name: `score:${name}`,
    observeOnly: true,
    afterModelResponse(response: AssistantMessage) {
      for (const block of response.content)
        if (block.type === 'toolCall') calls.push({ name: block.name, arguments: block.arguments });
      return undefined;
    },
    score: () => score(calls),
  };
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => deepEqual((a as never)[k], (b as never)[k]));
}

function argsMatch(want: ExpectedToolCall, got: Record<string, unknown>, mode: 'subset' | 'exact'): boolean {
  if (want.arguments === undefined) return true;
  if (mode === 'exact') return deepEqual(want.arguments, got);
  return Object.entries(want.arguments).every(([k, v]) => deepEqual(v, got[k]));
}

function expectedCalls(evalCase: EvalCase, scorer: string): readonly ExpectedToolCall[] {
  const calls = evalCase.expected?.toolCalls;
  if (!Array.isArray(calls)) throw new TypeError(`the case has no expected.toolCalls (for ${scorer})`);
  return calls as readonly ExpectedToolCall[];
}

/** Trajectory: the tool calls the run made, in order, with arguments matching the case's `expected.toolCalls`. */
export function trajectory(options: TrajectoryOptions = {}): Scorer {
  const mode = options.mode ?? 'exact';
  const args = options.args ?? 'subset';
  return {
    name: mode === 'exact' ? 'trajectory' : 'trajectory:subset',
    observe: (evalCase) => {
      const want = expectedCalls(evalCase, 'trajectory');
      return toolCallObserver('trajectory', (calls) => {
        const made = calls.map((c) => c.name);
        if (mode === 'exact') {
          const ok =
            calls.length === want.length &&
            want.every((w, i) => w.name === calls[i]!.name && argsMatch(w, calls[i]!.arguments, args));
          return binary(ok, ok ? undefined : { made: calls, want });
        }
        let found = 0;
        for (const call of calls) {
          const w = want[found];
          if (w !== undefined && w.name === call.name && argsMatch(w, call.arguments, args)) found++;
        }
        const score = want.length === 0 ? 1 : found / want.length;
        return { score, pass: score === 1, details: score === 1 ? undefined : { made, want: want.map((w) => w.name) } };
      });
    },
  };
}

/**
 * Tool choice: the set of tools the run called against the set the case expects (by name, order and arguments
 * aside): the score is their overlap (intersection over union; 1 when both are empty), passing at 1.
 */
export function toolChoice(): Scorer {
  return {
    name: 'toolChoice',
    observe: (evalCase) => {
      const want = new Set(expectedCalls(evalCase, 'toolChoice').map((c) => c.name));
      return toolCallObserver('toolChoice', (calls) => {
        const used = new Set(calls.map((c) => c.name));
        const union = new Set([...want, ...used]);
        const both = [...want].filter((n) => used.has(n)).length;
        const score = union.size === 0 ? 1 : both / union.size;
        return { score, pass: score === 1, details: score === 1 ? undefined : { used: [...used], want: [...want] } };
      });
    },
  };
}

/** Options of the metric scorers: the most that passes (without it, every run passes and the value is reported). */
export interface MetricOptions {
  readonly max?: number | undefined;
}

/** A metric scorer: `measure` sums over the run's model responses (or is read at the run's end). */
function metric(
  name: string,
  options: MetricOptions,
  build: (env: ScorerEnv) => {
    readonly hooks: Pick<Middleware, 'afterModelResponse' | 'onRunStart' | 'onRunEnd'>;
    readonly value: () => number;
  },
): Scorer {
  return {
    name,
    observe: (_evalCase, env) => {
      const { hooks, value } = build(env);
      return {
        name: `score:${name}`,
        observeOnly: true,
        ...hooks,
        score: () => {
          const v = value();
          const pass = options.max === undefined || v <= options.max;
          return { score: pass ? 1 : 0, pass, value: v };
        },
      };
    },
  };
}

/** Turns: how many model responses the run had. */
export function turns(options: MetricOptions = {}): Scorer {
  return metric('turns', options, () => {
    let n = 0;
    return { hooks: { afterModelResponse: () => void n++ }, value: () => n };
  });
}

/** Tokens: the run's total tokens (every response's `usage.totalTokens`). */
export function tokens(options: MetricOptions = {}): Scorer {
  return metric('tokens', options, () => {
    let n = 0;
    return { hooks: { afterModelResponse: (r: AssistantMessage) => void (n += r.usage.totalTokens) }, value: () => n };
  });
}

/** Cost: the run's total cost (every response's `usage.cost.total`, in the model table's currency). */
export function cost(options: MetricOptions = {}): Scorer {
  return metric('cost', options, () => {
    let n = 0;
    return { hooks: { afterModelResponse: (r: AssistantMessage) => void (n += r.usage.cost.total) }, value: () => n };
  });
}

/** Latency: ms from the run's start to its end on the eval's clock (virtual in replay, so it repeats exactly). */
export function latency(options: MetricOptions = {}): Scorer {
  return metric('latency', options, (env) => {
    let start = 0;
    let end = 0;
    return {
      hooks: { onRunStart: () => void (start = env.now()), onRunEnd: () => void (end = env.now()) },
      value: () => end - start,
    };
  });
}
