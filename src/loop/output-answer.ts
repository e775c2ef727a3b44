/**
 * Checking a final answer against the run's `output`: parsed from the text (native and prompt modes) or taken from
 * the final tool's arguments (tool mode), then validated by the schema's own `~standard.validate`.
 * @module
 */
import { errorMessageOf } from '../types/errors.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import type { OutputIssue, OutputValidationResult } from '../types/output.js';
import type { OutputPlan } from './output-plan.js';

/** What checking an answer gave: its value, or why it is not one. */
export type AnswerCheck =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly issues: readonly OutputIssue[] };

/** How a run's typed answer stands (on the run state; one per run with `output`). */
export interface AnswerState {
  /** Answers checked so far. */
  attempts: number;
  /** Set once an answer was valid. */
  done: boolean;
  value: unknown;
  /** The last invalid answer's issues. */
  issues: readonly OutputIssue[];
  /** Set when an invalid answer found the retries spent. */
  spent: boolean;
}

/** A fresh answer state. */
export function newAnswerState(): AnswerState {
  return { attempts: 0, done: false, value: undefined, issues: [], spent: false };
}

/**
 * The JSON value of an answer's text: the whole text, or the content of a ```json fence in it (models in prompt mode
 * often wrap the value). An issue at the root when it is not JSON.
 */
export function parseAnswerText(text: string): { ok: true; json: unknown } | { ok: false; issues: OutputIssue[] } {
  const trimmed = text.trim();
  const fenced = /```(?:json)?\s*\n?([\s\S]*?)```/.exec(trimmed);
  const candidates = fenced === null ? [trimmed] : [trimmed, fenced[1]!.trim()];
  let failure = '';
  for (const candidate of candidates) {
    try {
      return { ok: true, json: JSON.parse(candidate) as unknown };
    } catch (error) {
      failure ||= errorMessageOf(error);
    }
  }
  return {
    ok: false,
    issues: [
      { path: [], message: trimmed === '' ? 'the answer is empty, not JSON' : `the answer is not JSON (${failure})` },
    ],
  };
}

/**
 * Validates `json` with the plan's schema (`~standard.validate`, which may answer asynchronously). In tool mode with a
 * wrapped schema, `json` is the call's arguments and the answer is their `value`. A `validate` that throws is an issue
 * at the root: the model is asked again, as for any invalid answer.
 */
export function validateAnswer(
  plan: OutputPlan,
  json: unknown,
  fromTool: boolean,
): AnswerCheck | PromiseLike<AnswerCheck> {
  let value = json;
  if (fromTool && plan.wrapped) {
    if (typeof json !== 'object' || json === null || !('value' in json))
      return { ok: false, issues: [{ path: ['value'], message: 'the answer must be given as `value`' }] };
    value = json.value;
  }
  let result: OutputValidationResult<unknown> | PromiseLike<OutputValidationResult<unknown>>;
  try {
    result = plan.schema['~standard'].validate(value);
  } catch (error) {
    return thrown(error);
  }
  return isPromiseLike(result) ? result.then(toCheck, thrown) : toCheck(result);
}

function toCheck(result: OutputValidationResult<unknown>): AnswerCheck {
  if (result.issues === undefined) return { ok: true, value: result.value };
  return {
    ok: false,
    issues: result.issues.map((issue) => ({
      path: (issue.path ?? []).map((segment) => {
        const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
        return typeof key === 'number' ? key : String(key);
      }),
      message: issue.message,
    })),
  };
}

function thrown(error: unknown): AnswerCheck {
  return { ok: false, issues: [{ path: [], message: `the schema's validation threw: ${errorMessageOf(error)}` }] };
}

/** The issues as lines for the model: `- city: Invalid input…`, `(value)` for the root. */
export function issuesText(issues: readonly OutputIssue[]): string {
  return issues
    .map((issue) => `- ${issue.path.length > 0 ? issue.path.join('.') : '(value)'}: ${issue.message}`)
    .join('\n');
}
