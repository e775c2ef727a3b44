/**
 * The eval runner: an agent over a dataset, live or replayed in virtual time, scored by observe-only middleware.
 * Pure (no `node:` import).
 * @module
 */
import type { Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { Agent } from '../agent/agent.js';
import { HOOK_NAMES, type Middleware } from '../middleware/types.js';
import type { RunOutcome } from '../types/agent-events.js';
import { ConfigurationError, CubepiError, RunAbortedError } from '../types/errors.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import type { Provider } from '../types/provider.js';
import { defineDataset, type EvalCase, type EvalDataset } from './dataset.js';
import { EvalCaseError, RecordingExhaustedError, ScorerError } from './errors.js';
import { replayProvider, type ProviderRecorder, type RecordedCall, type ReplayOptions } from './recording.js';
import type { Scorer, ScorerEnv, ScorerObserver, ScoreResult } from './scorers.js';

/** What `createAgent` gets for each case. */
export interface EvalAgentContext {
  readonly case: EvalCase;
  /**
   * The provider to build the agent on: in replay, a `FauxProvider` answering with the case's recorded calls; live,
   * the recorder's provider for this case when a `recorder` is given; otherwise `undefined` (use your own).
   */
  readonly provider: Provider | undefined;
  /** The scorers' observers for this case: put them in the agent's `middleware` (they only observe). */
  readonly middleware: readonly Middleware[];
}

/** Options of {@link evaluate}. */
export interface EvaluateOptions {
  /** Builds a fresh agent for each case (no checkpointer needed: each case is one run of a new thread). */
  readonly createAgent: (context: EvalAgentContext) => Agent | PromiseLike<Agent>;
  /** The cases: a dataset (its `problems` are carried into the report) or a list (checked as `defineDataset` does). */
  readonly dataset: EvalDataset | readonly unknown[];
  /** The scorers, names unique. */
  readonly scorers: readonly Scorer[];
  /**
   * `replay`: each case runs inside `TestScheduler.run()` on a `FauxProvider` answering with `recordings`, so the
   * whole eval is deterministic and free; `live`: on the agent's own provider, on the wall clock.
   */
  readonly mode: 'live' | 'replay';
  /** The recorded calls (`parseRecordings`, `loadRecordings`); required in replay. */
  readonly recordings?: readonly RecordedCall[] | undefined;
  /** Live: records every case's calls (see `recordProvider`); the context's `provider` is the recorder's. */
  readonly recorder?: ProviderRecorder | undefined;
  /** Replay pacing (virtual ms per chunk, chunk size). */
  readonly replay?: Omit<ReplayOptions, 'scheduler'> | undefined;
  /** Only the cases with one of these tags. */
  readonly tags?: readonly string[] | undefined;
  /**
   * Cancels the eval: the running case's run is unsubscribed (its model request aborted, its tools signalled), no
   * further case starts, and `evaluate` rejects with a `RunAbortedError` (reason `signal`).
   */
  readonly signal?: AbortSignal | undefined;
}

/** An error as a result line carries it. */
export interface EvalErrorInfo {
  readonly name: string;
  readonly code: string;
  readonly message: string;
}

/** One case × scorer. */
export interface CaseScore extends ScoreResult {
  readonly caseId: string;
  readonly scorer: string;
  /** Set when the scorer threw: a `ScorerError` (the score is then 0, not passing). */
  readonly error?: EvalErrorInfo | undefined;
}

/** One case: its run's outcome, whether it passed (no error and every scorer passing), and its scores. */
export interface CaseResult {
  readonly caseId: string;
  readonly pass: boolean;
  /** How the run ended; absent when it could not run. */
  readonly outcome?: RunOutcome | undefined;
  /** Set when the case failed outside the scorers (`EvalCaseError`, `RecordingExhaustedError`). */
  readonly error?: EvalErrorInfo | undefined;
  readonly scores: readonly CaseScore[];
}

/** A dataset problem as a result line carries it. */
export interface EvalProblem extends EvalErrorInfo {
  readonly source: string;
  readonly line?: number | undefined;
  readonly caseId?: string | undefined;
}

/** The totals of a run: per scorer the mean score, pass rate and errors; overall the fraction of cases passing. */
export interface EvalSummary {
  readonly mode: 'live' | 'replay';
  readonly cases: number;
  readonly passed: number;
  /** `passed / cases` (0 for no cases). */
  readonly passRate: number;
  /** How many dataset lines or cases were left out (see `problems`). */
  readonly problems: number;
  readonly scorers: Readonly<
    Record<string, { readonly mean: number; readonly passRate: number; readonly errors: number }>
  >;
}

/** What {@link evaluate} resolves with; `reportToJSONL` writes it, `parseReport` reads it back. */
export interface EvalReport {
  readonly cases: readonly CaseResult[];
  readonly problems: readonly EvalProblem[];
  readonly summary: EvalSummary;
}

/** An error as a result line carries it: its class name, its `code` (`unknown` for a non-cubepi error), its message. */
export function errorInfo(error: unknown): EvalErrorInfo {
  if (error instanceof CubepiError) return { name: error.name, code: error.code, message: error.message };
  if (error instanceof Error) return { name: error.name, code: 'unknown', message: error.message };
  return { name: 'Error', code: 'unknown', message: String(error) };
}

/** The observer's hooks, each failure caught and kept (the run goes on; the score becomes a `ScorerError`). */
function guarded(scorer: string, observer: ScorerObserver, fail: (error: unknown) => void): Middleware {
  // Named after the scorer (unique in the eval), so two observers never share a middleware name.
  const wrapped: Record<string, unknown> = { name: `eval:${scorer}`, observeOnly: true };
  for (const hook of HOOK_NAMES) {
    const fn = (observer as unknown as Record<string, unknown>)[hook];
    if (typeof fn !== 'function') continue;
    const keep = hook === 'transformContext' || hook === 'transformSystemPrompt' || hook === 'convertToLlm';
    wrapped[hook] = (...args: unknown[]) => {
      const fallback = keep ? args[0] : undefined;
      try {
        const answer: unknown = (fn as (...a: unknown[]) => unknown).apply(observer, args);
        if (isPromiseLike(answer))
          return Promise.resolve(answer).then(undefined, (error: unknown) => (fail(error), fallback));
        return answer;
      } catch (error) {
        fail(error);
        return fallback;
      }
    };
  }
  return wrapped;
}

const strictEqual = (a: unknown, b: unknown): void => {
  if (a !== b) throw new Error('not equal');
};

/**
 * Runs the agent over every case, one after another, and scores each run with every scorer.
 *
 * In `replay`, each case's agent gets a `FauxProvider` answering with the case's recorded calls, and its run happens
 * inside `TestScheduler.run()`: the chunks' pacing, the tools' and hooks' Observables, and the `latency` scorer's
 * clock are virtual, so the same recordings give the same report on every run (hooks or tools answering with Promises
 * still work, outside virtual time). A case that asks for more calls than recorded fails with a
 * `RecordingExhaustedError`; a scorer that throws gives that case a `ScorerError` for it; a case whose agent cannot be
 * built or whose run errors fails with an `EvalCaseError`; every other case is still run and reported. Dataset
 * problems are carried into the report. Throws (a `ConfigurationError`) only for options that cannot work: duplicate
 * scorer names, replay without recordings.
 */
export async function evaluate(options: EvaluateOptions): Promise<EvalReport> {
  const names = options.scorers.map((s) => s.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate !== undefined) throw new ConfigurationError(`evaluate: two scorers are named ${duplicate}`);
  if (options.mode !== 'live' && options.mode !== 'replay')
    throw new ConfigurationError(`evaluate: mode is 'live' or 'replay', not ${JSON.stringify(options.mode)}`);
  if (options.mode === 'replay' && options.recordings === undefined)
    throw new ConfigurationError('evaluate: replay needs recordings');
  const dataset: EvalDataset = Array.isArray(options.dataset)
    ? defineDataset(options.dataset)
    : (options.dataset as EvalDataset);
  const byCase = new Map<string, RecordedCall[]>();
  for (const call of options.recordings ?? []) {
    const list = byCase.get(call.caseId);
    if (list === undefined) byCase.set(call.caseId, [call]);
    else list.push(call);
  }
  const cases = dataset.cases.filter(
    (c) => options.tags === undefined || (c.tags ?? []).some((t) => options.tags!.includes(t)),
  );
  const results: CaseResult[] = [];
  for (const evalCase of cases) {
    if (options.signal?.aborted === true) throw new RunAbortedError('signal', 'the eval was cancelled');
    results.push(await runCase(evalCase, options, byCase.get(evalCase.id) ?? []));
  }
  if (options.signal?.aborted === true) throw new RunAbortedError('signal', 'the eval was cancelled');
  const problems: EvalProblem[] = dataset.problems.map((p) => ({
    ...errorInfo(p),
    source: p.source,
    ...(p.line === undefined ? {} : { line: p.line }),
    ...(p.caseId === undefined ? {} : { caseId: p.caseId }),
  }));
  return { cases: results, problems, summary: summarize(options.mode, names, results, problems.length) };
}

/** The totals of `results` (also what `parseReport` recomputes nothing of: it reads the summary line). */
export function summarize(
  mode: 'live' | 'replay',
  scorers: readonly string[],
  results: readonly CaseResult[],
  problems: number,
): EvalSummary {
  const passed = results.filter((r) => r.pass).length;
  const perScorer: Record<string, { mean: number; passRate: number; errors: number }> = {};
  for (const name of scorers) {
    const scores = results.flatMap((r) => r.scores.filter((s) => s.scorer === name));
    const n = scores.length;
    perScorer[name] = {
      mean: n === 0 ? 0 : scores.reduce((sum, s) => sum + s.score, 0) / n,
      passRate: n === 0 ? 0 : scores.filter((s) => s.pass).length / n,
      errors: scores.filter((s) => s.error !== undefined).length,
    };
  }
  return {
    mode,
    cases: results.length,
    passed,
    passRate: results.length === 0 ? 0 : passed / results.length,
    problems,
    scorers: perScorer,
  };
}

async function runCase(evalCase: EvalCase, options: EvaluateOptions, recorded: RecordedCall[]): Promise<CaseResult> {
  const replay = options.mode === 'replay';
  const scheduler = replay ? new TestScheduler(strictEqual) : undefined;
  const env: ScorerEnv = { now: scheduler === undefined ? () => Date.now() : () => scheduler.now() };
  const failures = new Map<string, unknown>();
  const observers = new Map<string, ScorerObserver>();
  const middleware: Middleware[] = [];
  for (const scorer of options.scorers) {
    try {
      const observer = scorer.observe(evalCase, env);
      observers.set(scorer.name, observer);
      middleware.push(
        guarded(scorer.name, observer, (error) => failures.has(scorer.name) || failures.set(scorer.name, error)),
      );
    } catch (error) {
      failures.set(scorer.name, error);
    }
  }
  const faux = replay ? replayProvider(recorded, options.replay) : undefined;
  const provider = faux ?? options.recorder?.forCase(evalCase.id);

  let outcome: RunOutcome | undefined;
  let caseError: unknown;
  try {
    const agent = await options.createAgent({ case: evalCase, provider, middleware });
    outcome = await runAgent(agent, evalCase, scheduler, options.signal);
  } catch (error) {
    if (error instanceof RunAbortedError) throw error;
    caseError =
      error instanceof CubepiError ? error : new EvalCaseError(evalCase.id, errorInfo(error).message, { cause: error });
  }
  if (faux !== undefined && faux.callCount > recorded.length)
    caseError = new RecordingExhaustedError(evalCase.id, recorded.length, faux.callCount);

  const scores: CaseScore[] = [];
  for (const scorer of options.scorers) {
    const base = { caseId: evalCase.id, scorer: scorer.name };
    let failure = failures.get(scorer.name);
    if (failure === undefined) {
      try {
        const result = await observers.get(scorer.name)!.score();
        scores.push({ ...base, ...clean(result) });
        continue;
      } catch (error) {
        failure = error;
      }
    }
    const error = new ScorerError(scorer.name, evalCase.id, errorInfo(failure).message, { cause: failure });
    scores.push({ ...base, score: 0, pass: false, error: errorInfo(error) });
  }
  return {
    caseId: evalCase.id,
    pass: caseError === undefined && scores.every((s) => s.pass),
    ...(outcome === undefined ? {} : { outcome }),
    ...(caseError === undefined ? {} : { error: errorInfo(caseError) }),
    scores,
  };
}

/** A score as a result line carries it: finite numbers, no `undefined` fields. */
function clean(result: ScoreResult): ScoreResult {
  if (
    typeof result !== 'object' ||
    result === null ||
    typeof result.score !== 'number' ||
    !Number.isFinite(result.score)
  )
    throw new TypeError(`a score is { score: number in [0, 1], pass }, got ${JSON.stringify(result)}`);
  return {
    score: result.score,
    pass: result.pass === true,
    ...(result.value === undefined ? {} : { value: result.value }),
    ...(result.details === undefined ? {} : { details: result.details }),
  };
}

/** Runs the case's prompt to its end (in virtual time with `scheduler`), resolving with the run's outcome. */
function runAgent(
  agent: Agent,
  evalCase: EvalCase,
  scheduler: TestScheduler | undefined,
  signal: AbortSignal | undefined,
): Promise<RunOutcome> {
  return new Promise<RunOutcome>((resolve, reject) => {
    let outcome: RunOutcome | undefined;
    let subscription: Subscription | undefined;
    const onAbort = () => {
      subscription?.unsubscribe();
      reject(new RunAbortedError('signal', 'the eval was cancelled'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const settle = () => signal?.removeEventListener('abort', onAbort);
    const start = () =>
      (subscription = agent.prompt$(evalCase.input).subscribe({
        next: (event) => {
          if (event.type === 'agent_end') outcome = event.outcome;
        },
        error: (error: unknown) => (settle(), reject(error)),
        complete: () => {
          settle();
          if (outcome === undefined) reject(new EvalCaseError(evalCase.id, 'the run ended without agent_end'));
          else resolve(outcome);
        },
      }));
    if (scheduler === undefined) start();
    else scheduler.run(() => void start());
  });
}
