/**
 * What each hook may answer. A wrong shape is a hook bug, reported as a `HookError` naming the hook's owner.
 * @module
 */
import { checkPatch } from '../types/apply-patch.js';
import { toolResultProblem } from '../types/check-tool-result.js';
import { isHookDecision, type HookDecision } from '../types/decision.js';
import type { HookName } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { StatePatch } from '../types/state.js';
import type { AgentToolResult } from '../types/tool.js';
import type { AfterToolCallResult, BeforeToolCallResult, TurnAction } from './types.js';

/** The checked answer of each hook; `undefined` means "no answer" (the input unchanged, or nothing). */
export interface HookAnswers {
  transformContext: Message[] | undefined;
  convertToLlm: Message[] | undefined;
  transformSystemPrompt: string | undefined;
  beforeToolCall: BeforeToolCallResult | HookDecision<AgentToolResult> | undefined;
  afterToolCall: AfterToolCallResult | undefined;
  shouldStopAfterTurn: boolean | undefined;
  afterModelResponse: TurnAction | undefined;
  onRunStart: StatePatch | HookDecision<never> | undefined;
  onRunEnd: StatePatch | undefined;
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
      if (isHookDecision(answer)) checkDecision(answer, 'a tool result');
      break;
    case 'onRunStart':
      if (isHookDecision(answer)) {
        if (answer.kind === 'replace' || answer.kind === 'pause')
          throw new TypeError(`onRunStart may answer continue or stop, not ${answer.kind}`);
        checkDecision(answer, 'nothing');
      } else checkPatch(answer);
      break;
    case 'onRunEnd':
      checkPatch(answer);
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

/** A decision's fields, checked: `value` of a replace is checked by the caller's `what`. */
function checkDecision(decision: HookDecision<unknown>, what: 'a tool result' | 'nothing'): void {
  switch (decision.kind) {
    case 'continue':
      if (decision.patch !== undefined) checkPatch(decision.patch);
      return;
    case 'replace': {
      if (typeof decision.reason !== 'string') throw new TypeError('a replace decision needs a reason');
      const problem = what === 'a tool result' ? toolResultProblem(decision.value) : 'nothing can be replaced here';
      if (problem !== undefined) throw new TypeError(`the replace decision's value is invalid: ${problem}`);
      return;
    }
    case 'pause':
      if (typeof decision.reason !== 'string') throw new TypeError('a pause decision needs a reason');
      if (
        decision.resumeToken !== undefined &&
        (typeof decision.resumeToken !== 'string' || decision.resumeToken === '')
      )
        throw new TypeError(
          `a pause decision's resumeToken is a non-empty string, got ${describe(decision.resumeToken)}`,
        );
      if (decision.expiresAt !== undefined && !Number.isFinite(decision.expiresAt))
        throw new TypeError(
          `a pause decision's expiresAt is a finite epoch-ms number, got ${describe(decision.expiresAt)}`,
        );
      try {
        JSON.stringify(decision.payload);
      } catch (error) {
        throw new TypeError(`a pause decision's payload cannot be stored as JSON (${(error as Error).message})`, {
          cause: error,
        });
      }
      return;
    case 'stop':
      if (decision.outcome !== 'failed' && decision.outcome !== 'cancelled')
        throw new TypeError(`a stop decision's outcome is "failed" or "cancelled", got ${describe(decision.outcome)}`);
      if (typeof decision.reason !== 'string') throw new TypeError('a stop decision needs a reason');
  }
}

function checkAfterToolCall(value: unknown): void {
  if (typeof value !== 'object' || Array.isArray(value))
    throw new TypeError(`expected an object or nothing, got ${describe(value)}`);
  // The fields it sets end up in the stored result: they pass the check a tool's own result passes.
  const { content, details, isError, terminate, patch } = value as AfterToolCallResult;
  const problem = toolResultProblem({ content: content ?? [], details, isError, terminate });
  if (problem !== undefined) throw new TypeError(`the afterToolCall result is invalid: ${problem}`);
  if (patch !== undefined) checkPatch(patch);
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
  if (action.patch !== undefined) checkPatch(action.patch);
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}
