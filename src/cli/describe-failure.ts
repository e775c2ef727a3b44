/**
 * Turns a failed run or a thrown error into one line a person can act on (what happened, what to do), with the raw
 * provider error kept for `--debug`.
 * @module
 */
import {
  CheckpointError,
  ThreadConflictError,
  type AgentEndEvent,
  type AssistantMessage,
  type HookError,
} from '../index.js';
import { CliError } from './cli-error.js';
import type { ModelChoice } from './choose-model.js';
import { describeProviderError } from './describe-provider-error.js';

/** The `CliError` for a run that ended `failed`, or undefined when it did not fail. */
export function runFailure(end: AgentEndEvent | undefined, choice: ModelChoice, model: string): CliError | undefined {
  if (end === undefined || end.outcome !== 'failed') return undefined;
  const failed = end.messages.findLast(
    (m): m is AssistantMessage => m.role === 'assistant' && m.stopReason === 'error',
  );
  if (failed === undefined) return new CliError('the run failed (see --debug for its events)');
  return providerFailure(failed, choice, model);
}

/** The `CliError` for an assistant message that carries a provider error (its line: `describeProviderError`). */
export function providerFailure(message: AssistantMessage, choice: ModelChoice, model: string): CliError {
  const debug = `provider error (${message.errorKind ?? 'unknown'}): ${message.errorMessage ?? 'unknown error'}`;
  const context = {
    vendor: choice.providerName === 'anthropic' ? 'anthropic' : 'openai',
    responsesApi: choice.providerName === 'openai-responses',
    endpoint: choice.endpoint,
    model,
  } as const;
  return new CliError(describeProviderError(message, context), 1, { debug });
}

/** The `CliError` for an error a run threw (a checkpoint failure, a hook bug). */
export function thrownFailure(error: unknown, storeDescription: string): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof ThreadConflictError) {
    return new CliError(`${error.message}: another process wrote this thread meanwhile; run again to continue`, 1, {
      cause: error,
    });
  }
  if (error instanceof CheckpointError) {
    return new CliError(`the thread store (${storeDescription}) failed: ${error.message}`, 1, { cause: error });
  }
  const hook = error as Partial<HookError>;
  const message = error instanceof Error ? error.message : String(error);
  return new CliError(hook.name === 'HookError' ? `a middleware failed: ${message}` : message, 1, { cause: error });
}
