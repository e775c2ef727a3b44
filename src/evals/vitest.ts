/**
 * `cubepi/evals/vitest`: the `toPass(threshold)` matcher for vitest (or jest), installed with `expect.extend`.
 * Imports nothing from vitest: it is a plain matcher object.
 * @module
 */
import type { EvalReport } from './evaluate.js';
import { formatReport } from './report.js';

/** What a matcher returns to `expect.extend`. */
export interface MatcherResult {
  readonly pass: boolean;
  readonly message: () => string;
}

/**
 * The eval matchers: `expect(report).toPass(threshold = 1)` passes when the report's pass rate (cases passing every
 * scorer, with no error) is at least `threshold`; the failure message is the report's table.
 *
 * @example
 * import { expect } from 'vitest';
 * import { evalMatchers } from 'cubepi/evals/vitest';
 * expect.extend(evalMatchers);
 * expect(await evaluate({ … })).toPass(0.9);
 */
export const evalMatchers = {
  toPass(received: unknown, threshold = 1): MatcherResult {
    const report = received as EvalReport | undefined;
    if (typeof report?.summary?.passRate !== 'number')
      return { pass: false, message: () => 'toPass expects the report evaluate() resolves with' };
    const pass = report.summary.passRate >= threshold;
    return {
      pass,
      message: () =>
        `expected the eval's pass rate ${report.summary.passRate} ${pass ? 'to be below' : 'to be at least'} ${threshold}\n${formatReport(report)}`,
    };
  },
};

/** The matcher's types, for `declare module 'vitest' { interface Assertion<T> extends EvalMatchers<T> {} }`. */
export interface EvalMatchers<R = unknown> {
  /** The report's pass rate is at least `threshold` (1 by default). */
  toPass(threshold?: number): R;
}
