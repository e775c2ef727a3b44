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

/** The `CliError` for a run that ended `failed`, or undefined when it did not fail. */
export function runFailure(end: AgentEndEvent | undefined, choice: ModelChoice, model: string): CliError | undefined {
  if (end === undefined || end.outcome !== 'failed') return undefined;
  const failed = end.messages.findLast(
    (m): m is AssistantMessage => m.role === 'assistant' && m.stopReason === 'error',
  );
  if (failed === undefined) return new CliError('the run failed (see --debug for its events)');
  return providerFailure(failed, choice, model);
}

/** The `CliError` for an assistant message that carries a provider error. */
export function providerFailure(message: AssistantMessage, choice: ModelChoice, model: string): CliError {
  const raw = message.errorMessage ?? 'unknown error';
  const debug = `provider error (${message.errorKind ?? 'unknown'}): ${raw}`;
  const short = raw.replace(/\s+/g, ' ').slice(0, 300);
  const vendor = choice.providerName;
  const keyVar = vendor === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
  const say = (text: string) => new CliError(text, 1, { debug });
  switch (message.errorKind) {
    case 'auth':
      return say(`${choice.endpoint} refused the credentials (${short}): check ${keyVar}`);
    case 'rate_limited':
      return say(`${choice.endpoint} is rate limiting this key (${short}): wait and retry, or use another --model`);
    case 'context_overflow':
      return say(`the conversation is too long for ${model} (${short}): start a new thread (omit --thread, or /new)`);
    default:
  }
  // A server without the endpoint answers 404 and nothing more (a model it lacks gets an error body naming it).
  if (vendor === 'openai-responses' && /\b404 status code \(no body\)$/.test(raw.trim())) {
    return say(`${choice.endpoint} has no Responses API (${short}): use --provider openai`);
  }
  if (/\b404\b|not[ _]found|does not exist|unknown model|model_not_found/i.test(raw) && /model|404/i.test(raw)) {
    return say(
      `model "${model}" was not found at ${choice.endpoint} (${short}): pass --model with a model it serves ` +
        '(docs/cli.md#models)',
    );
  }
  if (/ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|fetch failed|Connection error|socket|network/i.test(raw)) {
    const variable = vendor === 'anthropic' ? 'ANTHROPIC_BASE_URL' : 'OPENAI_BASE_URL';
    return say(`cannot reach ${choice.endpoint} (${short}): check your network and ${variable}`);
  }
  return say(`${vendor} failed: ${short}`);
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
