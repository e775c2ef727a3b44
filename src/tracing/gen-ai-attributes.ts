/**
 * The OpenTelemetry GenAI semantic conventions, as cubepi's values map onto them.
 * @module
 */
import type { Attributes } from '@opentelemetry/api';
import type { AssistantMessage, Message, StopReason } from '../types/messages.js';
import type { ResolvedReasoning } from '../types/model.js';
import type { Usage } from '../types/usage.js';

/** Attribute names: the GenAI conventions' and cubepi's own. */
export const ATTR = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreationTokens: 'gen_ai.usage.cache_creation.input_tokens',
  reasoningTokens: 'gen_ai.usage.reasoning.output_tokens',
  agentName: 'gen_ai.agent.name',
  conversationId: 'gen_ai.conversation.id',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  tokenType: 'gen_ai.token.type',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  errorType: 'error.type',
  exceptionMessage: 'exception.message',
  threadId: 'cubepi.thread_id',
  runId: 'cubepi.run_id',
  turnIndex: 'cubepi.turn_index',
  invocationId: 'cubepi.invocation_id',
  attemptId: 'cubepi.attempt_id',
  attempt: 'cubepi.attempt',
  fallbackFrom: 'cubepi.fallback_from',
  stopReason: 'cubepi.stop_reason',
  toolOutcome: 'cubepi.tool.outcome',
  runOutcome: 'cubepi.run.outcome',
  timeToFirstChunk: 'cubepi.time_to_first_chunk_ms',
  promptHash: 'cubepi.prompt.hash',
  costUsd: 'cubepi.usage.cost_usd',
  approvalRequestId: 'cubepi.approval.request_id',
  approvalReason: 'cubepi.approval.reason',
  middleware: 'cubepi.middleware',
  middlewareVersion: 'cubepi.middleware.version',
  middlewareChain: 'cubepi.middleware.chain',
  hook: 'cubepi.hook',
  hookAttempt: 'cubepi.hook.attempt',
  hookInvocationId: 'cubepi.hook.invocation_id',
  stateProducer: 'cubepi.state.producer',
  stateVersion: 'cubepi.state.version',
  handoffFrom: 'cubepi.handoff.from',
  handoffTo: 'cubepi.handoff.to',
  compactionReason: 'cubepi.compaction.reason',
  compactionThroughSeq: 'cubepi.compaction.through_seq',
  compactionOutcome: 'cubepi.compaction.outcome',
  contextDropped: 'cubepi.context.dropped',
  contextBudget: 'cubepi.context.budget',
  reasoningRequested: 'cubepi.reasoning.requested',
  reasoningEffort: 'cubepi.reasoning.effort',
  reasoningBudgetTokens: 'cubepi.reasoning.budget_tokens',
  reasoningOff: 'cubepi.reasoning.off',
  reasoningClamped: 'cubepi.reasoning.clamped',
} as const;

/**
 * The `chat` span's attributes for the reasoning an attempt sends (`model_attempt.reasoning`): the run's setting
 * (`requested`: the level, or `budget` for a `{ budgetTokens }` setting), and what was sent for this model (`effort`,
 * `budget_tokens`, `off`), with `clamped` when the model could not take it as asked. The GenAI conventions define no
 * reasoning attribute yet, so these are cubepi's own.
 */
export function reasoningAttributes(reasoning: ResolvedReasoning): Attributes {
  const { requested } = reasoning;
  const attributes: Attributes = {
    [ATTR.reasoningRequested]: typeof requested === 'string' ? requested : 'budget',
  };
  if (reasoning.effort !== undefined) attributes[ATTR.reasoningEffort] = reasoning.effort;
  if (reasoning.budgetTokens !== undefined) attributes[ATTR.reasoningBudgetTokens] = reasoning.budgetTokens;
  if (reasoning.off === true) attributes[ATTR.reasoningOff] = true;
  if (reasoning.clamped === true) attributes[ATTR.reasoningClamped] = true;
  return attributes;
}

/** The value of `error.type` when nothing more precise is known (the conventions' fallback value). */
export const OTHER_ERROR = '_OTHER';

/**
 * `gen_ai.provider.name` for a provider id: the conventions' well-known names for the built-in providers
 * (`openai-responses` is OpenAI too), the id itself otherwise (`faux`, or the id given to an OpenAI-compatible server).
 */
export function providerName(providerId: string): string {
  return providerId === 'openai-responses' ? 'openai' : providerId;
}

/** `gen_ai.response.finish_reasons` for a stop reason (none for a cancelled call: it did not finish). */
export function finishReasons(stopReason: StopReason): string[] | undefined {
  switch (stopReason) {
    case 'stop':
      return ['stop'];
    case 'length':
      return ['length'];
    case 'toolUse':
      return ['tool_call'];
    case 'blocked':
      return ['content_filter'];
    case 'error':
      return ['error'];
    case 'aborted':
      return undefined;
  }
}

/**
 * Token counts in the conventions' terms: `input_tokens` includes the cached tokens (cubepi's `input` excludes them),
 * the cache reads and writes and the reasoning tokens are also given on their own (reasoning is part of
 * `output_tokens`, as in cubepi). Plus the call's cost in US dollars, from the model table's prices.
 */
export function usageAttributes(usage: Usage): Attributes {
  const attributes: Attributes = {
    [ATTR.inputTokens]: usage.input + usage.cacheRead + usage.cacheWrite,
    [ATTR.outputTokens]: usage.output,
  };
  if (usage.cacheRead > 0) attributes[ATTR.cacheReadTokens] = usage.cacheRead;
  if (usage.cacheWrite > 0) attributes[ATTR.cacheCreationTokens] = usage.cacheWrite;
  if (usage.reasoning > 0) attributes[ATTR.reasoningTokens] = usage.reasoning;
  if (usage.cost.total > 0) attributes[ATTR.costUsd] = usage.cost.total;
  return attributes;
}

/** A message in the shape of the conventions' `gen_ai.input.messages` (images as their MIME type, without data). */
export function semconvMessage(message: Message): Record<string, unknown> {
  switch (message.role) {
    case 'user':
      return {
        role: 'user',
        parts:
          typeof message.content === 'string'
            ? [{ type: 'text', content: message.content }]
            : message.content.map((block) =>
                block.type === 'text'
                  ? { type: 'text', content: block.text }
                  : { type: 'blob', modality: 'image', mime_type: block.mimeType },
              ),
      };
    case 'assistant':
      return assistantMessage(message);
    case 'toolResult':
      return {
        role: 'tool',
        parts: [
          {
            type: 'tool_call_response',
            id: message.toolCallId,
            response: message.content.map((block) =>
              block.type === 'text' ? block.text : { type: 'blob', modality: 'image', mime_type: block.mimeType },
            ),
          },
        ],
      };
  }
}

/** An assistant message in the shape of `gen_ai.output.messages` (redacted thinking left out: it is opaque data). */
export function assistantMessage(message: AssistantMessage): Record<string, unknown> {
  const parts: Record<string, unknown>[] = [];
  for (const block of message.content) {
    if (block.type === 'text') parts.push({ type: 'text', content: block.text });
    else if (block.type === 'thinking') {
      if (!block.redacted) parts.push({ type: 'reasoning', content: block.thinking });
    } else parts.push({ type: 'tool_call', id: block.id, name: block.name, arguments: block.arguments });
  }
  const reason = finishReasons(message.stopReason)?.[0];
  return { role: 'assistant', parts, ...(reason !== undefined ? { finish_reason: reason } : {}) };
}
