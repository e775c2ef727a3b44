/**
 * What each hook may answer. A wrong shape is a hook bug, reported as a `HookError` naming the hook's owner.
 * @module
 */
import { toolResultProblem } from '../types/check-tool-result.js';
import type { HookName } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { AfterToolCallResult, BeforeToolCallResult, TurnAction } from './types.js';

/** The checked answer of each hook; `undefined` means "no answer" (the input unchanged, or nothing). */
export interface HookAnswers {
  transformContext: Message[] | undefined;
  convertToLlm: Message[] | undefined;
  transformSystemPrompt: string | undefined;
  beforeToolCall: BeforeToolCallResult | undefined;
  afterToolCall: AfterToolCallResult | undefined;
  shouldStopAfterTurn: boolean | undefined;
  afterModelResponse: TurnAction | undefined;
}

/** Checks one answer of `hook`: returns it typed, or throws a `TypeError` saying what was wrong. */
export function checkAnswer<H extends HookName>(hook: H, answer: unknown): HookAnswers[H] {
  if (answer === undefined || answer === null) return undefined;
  switch (hook) {
    case 'transformContext':
    case 'convertToLlm':
      if (!Array.isArray(answer)) throw new TypeError(`expected an array of messages, got ${describe(answer)}`);
      break;
    case 'transformSystemPrompt':
      if (typeof answer !== 'string') throw new TypeError(`expected a string, got ${describe(answer)}`);
      break;
    case 'shouldStopAfterTurn':
      if (typeof answer !== 'boolean') throw new TypeError(`expected a boolean, got ${describe(answer)}`);
      break;
    case 'beforeToolCall':
      if (typeof answer !== 'object' || Array.isArray(answer))
        throw new TypeError(`expected an object or nothing, got ${describe(answer)}`);
      break;
    case 'afterToolCall':
      checkAfterToolCall(answer);
      break;
    case 'afterModelResponse':
      checkTurnAction(answer);
      break;
  }
  return answer as HookAnswers[H];
}

function checkAfterToolCall(value: unknown): void {
  if (typeof value !== 'object' || Array.isArray(value))
    throw new TypeError(`expected an object or nothing, got ${describe(value)}`);
  // The fields it sets end up in the stored result: they pass the check a tool's own result passes.
  const { content, details, isError, terminate } = value as AfterToolCallResult;
  const problem = toolResultProblem({ content: content ?? [], details, isError, terminate });
  if (problem !== undefined) throw new TypeError(`the afterToolCall result is invalid: ${problem}`);
}

function checkTurnAction(value: unknown): void {
  if (typeof value !== 'object' || Array.isArray(value))
    throw new TypeError(`expected a TurnAction or nothing, got ${describe(value)}`);
  const action = value as TurnAction;
  if (action.response !== undefined && (action.response as { role?: unknown } | null)?.role !== 'assistant') {
    throw new TypeError('the TurnAction response is not an assistant message');
  }
  if (action.decision !== undefined && !['natural', 'stop', 'loop_to_model'].includes(action.decision)) {
    throw new TypeError(`unknown TurnAction decision ${JSON.stringify(action.decision)}`);
  }
  if (action.injectMessages !== undefined && !Array.isArray(action.injectMessages)) {
    throw new TypeError('the TurnAction injectMessages is not an array');
  }
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}
