/**
 * `cubepi`: an RxJS-native LLM agent runtime. Agents, tools, providers and hooks, where everything that happens over
 * time is an Observable.
 * @module
 */
export { Agent, type AgentListener, type SubscribeOptions } from './agent/agent.js';
export type { AgentOptions, InputOptions, RunOptions } from './agent/agent-options.js';
export type { AgentForkOptions, RetryFromOptions } from './agent/retry-from.js';
export type { AgentState } from './agent/agent-state.js';
export type { QueueMode } from './agent/message-queues.js';
export { resolveModel } from './agent/resolve-model.js';
export { runAgentLoop, type RunAgentLoopOptions } from './loop/run-agent-loop.js';
export { outputJsonSchema, strictSchemaProblem, type StrictSchemaProblem } from './loop/output-json-schema.js';
export {
  agentTool,
  DEFAULT_MAX_AGENT_DEPTH,
  subagentEventOf,
  type AgentToolDetails,
  type AgentToolOptions,
  type AgentToolPromptSchema,
  type SubagentContext,
  type SubagentEvent,
} from './agent/agent-tool.js';
export { handoff, type HandoffContext, type HandoffOptions } from './agent/handoff.js';
export { lastN, removeToolCalls } from './agent/handoff-filters.js';
export { ACTIVE_AGENT_KEY, DEFAULT_MAX_HANDOFFS, type ActiveAgentRecord } from './loop/handoff-host.js';
export { childRunOptions, type ChildRunOptions } from './agent/child-run.js';
// Composition operators over agents (docs/composition.md).
export { CompositeMemberError } from './agent/compose/composite-events.js';
export type {
  CompositeEndEvent,
  CompositeEvent,
  CompositeInput,
  CompositeKind,
  CompositeOutcome,
  CompositePathPart,
  CompositeStartEvent,
  MemberEvent,
  MemberPending,
  MemberResult,
  SpendCount,
} from './agent/compose/composite-events.js';
export type {
  AgentFactory,
  CompositeMember,
  CompositeOptions,
  CompositeRunOptions,
  MemberContext,
} from './agent/compose/composite-member.js';
export { labelledAnswers, parallel, type MemberAnswer, type ParallelOptions } from './agent/compose/parallel.js';
export { race } from './agent/compose/race.js';
export { runComposite, type Composite } from './agent/compose/run-composite.js';
export { sequence, type SequenceComposite, type SequenceRunOptions } from './agent/compose/sequence.js';
export { supervise, type Manager, type ManagerContext, type Worker } from './agent/compose/supervise.js';
export type { ResumeAnswer, ResumeBatch } from './loop/resume-batch.js';
export type { RunSettings } from './loop/run-settings.js';
export { defineTool, validateToolArguments, type ToolSpec, type ValidationOutcome } from './tools/define-tool.js';
export { clientTool, type ClientToolSpec } from './tools/client-tool.js';
// The rest of the provider kit (fromSdkStream, error classification, the argument parsers) is `cubepi/providers/kit`;
// the assembler stays here too, where providers written before the kit import it from.
export { MessageAssembler, type MessageAssemblerInit } from './providers/message-assembler.js';
export { findModel, MODELS, modelPricing, sameModel } from './providers/model-table.js';
export { REASONING_BUDGETS, resolveReasoning } from './providers/reasoning.js';
export {
  composeMiddleware,
  EXPLICIT_HOOKS_NAME,
  type ComposedMiddleware,
  type HookChainDescription,
  type MiddlewareDescription,
  type WrapperChainDescription,
} from './middleware/compose-middleware.js';
export { BudgetCap, type BudgetCapOptions } from './middleware/budget-cap.js';
export { cache, requestKey, type CacheOptions, type ResponseStore } from './middleware/cache.js';
export {
  composeWrappers,
  type ComposedModelCall,
  type ComposedToolCall,
  type ComposedWrappers,
  type WrapperLayer,
  type WrapperName,
} from './middleware/compose-wrappers.js';
export { fallback, FALLBACK_ERROR_KINDS, type FallbackOptions, type FallbackTarget } from './middleware/fallback.js';
export { FailedBeforeContent, failBeforeContent } from './middleware/hold-until-content.js';
export { modelIncapability, type CapabilityRequest } from './middleware/model-incapability.js';
export { canServe, servingRefusal, type ServeRequest } from './agent/can-serve.js';
export { retry, TRANSIENT_ERROR_KINDS, type Backoff, type RetryOptions } from './middleware/retry.js';
export {
  WRAPPER_PHASES,
  type ModelCallContext,
  type ModelCallDecision,
  type ModelCallNext,
  type ModelRequest,
  type NextCalls,
  type ToolCallContext,
  type ToolCallDecision,
  type ToolCallNext,
  type ToolCallRequest,
  type ToolOutcome,
  type WrapperPhase,
  type Wrappers,
} from './middleware/wrapper-types.js';
export { MaxTurns } from './middleware/max-turns.js';
export { RedactToolResults, type Redactor } from './middleware/redact-tool-results.js';
export {
  DEFAULT_TOOL_RESULT_MAX_CHARS,
  limitToolResult,
  ToolResultLimit,
  type ToolResultCut,
  type ToolResultLimitOptions,
} from './middleware/tool-result-limit.js';
export { SlidingWindow, type SlidingWindowOptions } from './middleware/sliding-window.js';
export { StopOnText } from './middleware/stop-on-text.js';
export {
  STRUCTURED_OUTPUT_ERROR_KEY,
  STRUCTURED_OUTPUT_KEY,
  StructuredOutput,
  type StructuredOutputOptions,
} from './middleware/structured-output.js';
export { ToolCallLimit, type ToolCallLimitOptions } from './middleware/tool-call-limit.js';
export { ToolGuard, type ToolGuardOptions, type ToolPolicy, type ToolPolicyVerdict } from './middleware/tool-guard.js';
export {
  Decision,
  isHookDecision,
  type ContinueDecision,
  type HookDecision,
  type PauseDecision,
  type ReplaceDecision,
  type StopDecision,
} from './types/decision.js';
export {
  EMPTY_STATE,
  type ContextFragment,
  type HookState,
  type RuntimeEvent,
  type StateChange,
  type StatePatch,
} from './types/state.js';
export { applyPatch } from './types/apply-patch.js';
export {
  rememberedApprovalKey,
  type ApprovalAnswer,
  type ApprovalRequest,
  type ResumedApproval,
} from './types/approval.js';
export type { HookContext } from './middleware/hook-context.js';
export { ANONYMOUS_PRINCIPAL, isPrincipal, type Principal } from './types/principal.js';
export {
  HOOK_PHASES,
  type HookPhase,
  type MiddlewareChain,
  type MiddlewareChainLink,
} from './types/middleware-chain.js';
export {
  HOOK_NAMES,
  type AfterToolCallContext,
  type AfterToolCallResult,
  type AgentHooks,
  type ComposedHooks,
  type BeforeToolCallContext,
  type BeforeToolCallResult,
  type HookResult,
  type Middleware,
  type HookRetryPolicy,
  type TurnAction,
  type TurnDecision,
  type TurnEndContext,
  type BeforeToolCallAnswer,
  type RunEndContext,
  type RunStartAnswer,
} from './middleware/types.js';
export type * from './types/agent-events.js';
export type * from './types/content.js';
export type {
  Model,
  ModelCost,
  ModelIncapability,
  ModelInputKind,
  ModelThinking,
  ReasoningEffort,
  ReasoningLevel,
  ReasoningSetting,
  ResolvedReasoning,
} from './types/model.js';
export type * from './types/output.js';
export type { BlobStore } from './types/blob.js';
export { fileKind } from './types/file-kind.js';
export { base64ByteLength, DEFAULT_MAX_FILE_BYTES, fileProblem } from './types/check-file.js';
export { estimateFileTokens, type FileTokenRates } from './middleware/estimate-file-tokens.js';
export type {
  JsonSchema,
  Provider,
  StreamOptions,
  StreamRequest,
  ToolChoice,
  ToolDefinition,
} from './types/provider.js';
export type * from './types/stream-events.js';
export { isTerminalStreamEvent } from './types/stream-events.js';
export type {
  AgentTool,
  AgentToolResult,
  AnyAgentTool,
  ToolExecuteContext,
  ToolExecuteResult,
  ToolExecutionMode,
  ToolRunInfo,
  RunLimits,
} from './types/tool.js';
export {
  canonicalJson,
  isRecordOnly,
  serializeMessage,
  textOf,
  toolCallsOf,
  userMessage,
  type AssistantMessage,
  type Message,
  type MessageMetadata,
  type ProviderErrorKind,
  type ToolCallOutcome,
  type StopReason,
  type ToolResultMessage,
  type UserMessage,
} from './types/messages.js';
export {
  addUsage,
  computeUsage,
  EMPTY_USAGE,
  type SpendBound,
  type TokenCounts,
  type Usage,
  type UsageCost,
} from './types/usage.js';
export { usageOf } from './types/usage-of.js';
export {
  AgentBusyError,
  BlobMissingError,
  ConfigurationError,
  CubepiError,
  DuplicateInputError,
  errorMessageOf,
  HookError,
  InvalidInputError,
  InvalidStateError,
  isAbortError,
  OutputError,
  ProviderError,
  StaleApprovalError,
  StatePatchConflictError,
  StatePatchError,
  StatePatchPermissionError,
  RunAbortedError,
  ToolExecutionError,
  UnknownAgentError,
  EmbeddingError,
  StoreError,
  type StoreOperation,
  type AbortReason,
  type HookErrorDetails,
  type HookName,
} from './types/errors.js';
export type { StaleStateVersion } from './types/errors.js';

// Checkpointing: the contract, the in-memory backend and the errors of every backend (SQLite and PostgreSQL have their
// own entry points, so their drivers are never loaded by `cubepi`).
export type {
  AppendOptions,
  AppendResult,
  CheckpointData,
  Checkpointer,
  ForkOptions,
  ForkParent,
  ForkResult,
  ListThreadsOptions,
  ThreadInfo,
} from './checkpoint/checkpointer.js';
export { MemoryCheckpointer, type MemoryCheckpointerOptions } from './checkpoint/memory.js';

// Memory across threads: the Store contract and its in-memory backend (SQLiteStore and PostgresStore live in the
// checkpointers' entry points); the memory middleware is below with the other middleware.
export type {
  EmbedFunction,
  JsonValue,
  ListOptions,
  ListPage,
  Namespace,
  PutOptions,
  SearchItem,
  SearchOptions,
  Store,
  StoreItem,
  StoreOptions,
} from './types/store.js';
export { MemoryStore, type MemoryStoreOptions } from './checkpoint/memory-store.js';
export {
  fromSeedCheckpointer,
  type SeedCheckpointData,
  type SeedCheckpointer,
  type SeedCheckpointerOptions,
} from './checkpoint/from-seed-checkpointer.js';
// Files stored by reference (docs/files-storage.md): the in-memory blob store, the options every checkpointer takes.
export { MemoryBlobStore } from './checkpoint/memory-blob-store.js';
export { DEFAULT_BLOB_THRESHOLD, type BlobOptions } from './checkpoint/offload-files.js';
export { checkThreadId, MAX_THREAD_ID_LENGTH } from './checkpoint/check-arguments.js';
export {
  CheckpointCorruptionError,
  CheckpointError,
  CheckpointSchemaError,
  CheckpointUnsupportedError,
  ThreadConflictError,
  ThreadHasForksError,
  type CheckpointErrorDetails,
  type CheckpointOperation,
} from './types/errors.js';
export {
  estimateTokens,
  estimateMessageTokens,
  estimateTextTokens,
  reportedInputTokens,
  type TokenRequest,
} from './middleware/estimate-tokens.js';
export { TokenCalibration, type TokenEstimate } from './middleware/token-calibration.js';
export { ContextBudget, type ContextBudgetOptions } from './middleware/context-budget.js';
export { Compaction, DEFAULT_COMPACTION_INSTRUCTIONS, type CompactionOptions } from './middleware/compaction.js';
export { factKey } from './types/store.js';
export {
  memory,
  MEMORY_EXTRACTION_PROMPT,
  renderMemory,
  type MemoryFact,
  type MemoryOptions,
} from './middleware/memory.js';
export { rememberTool, type RememberToolOptions } from './tools/remember-tool.js';
export { COMPACTION_KEY, type CompactionEntry } from './middleware/compaction-entry.js';
export { inputGuardrail, type InputGuardrailOptions, type GuardrailInput } from './guardrails/input-guardrail.js';
export { outputGuardrail, type OutputGuardrailOptions, type GuardrailOutput } from './guardrails/output-guardrail.js';
export {
  toolGuardrail,
  type ToolGuardrailOptions,
  type GuardrailToolArgs,
  type GuardrailToolResult,
} from './guardrails/tool-guardrail.js';
export {
  DEFAULT_GUARDRAIL_TIMEOUT_MS,
  type GuardrailAnswer,
  type CheckSettled,
} from './guardrails/run-guardrail-check.js';
export {
  isRewrite,
  isTrip,
  type GuardrailPass,
  type GuardrailRewrite,
  type GuardrailTrip,
  type GuardrailVerdict,
  type TextCheck,
  type TextCheckContext,
} from './guardrails/verdict.js';
// Built-in guardrail checks (docs/guardrails-builtins.md): TextChecks a guardrail runs.
export {
  DEFAULT_PII_KINDS,
  detectPii,
  ibanChecksumValid,
  luhnValid,
  piiCheck,
  redactPii,
  type PiiCheckOptions,
  type PiiKind,
  type PiiMatch,
  type PiiOptions,
  type PiiPattern,
  type RedactPiiOptions,
} from './guardrails/pii.js';
export { keywordCheck, type KeywordCheckOptions } from './guardrails/keyword-filter.js';
export {
  PROMPT_INJECTION_SIGNALS,
  promptInjectionCheck,
  type PromptInjectionCheckOptions,
  type PromptInjectionSignal,
} from './guardrails/prompt-injection.js';
export { maxLengthCheck, type MaxLengthCheckOptions } from './guardrails/max-length.js';
export {
  DEFAULT_MODERATION_CATEGORIES,
  MODERATION_PROMPT,
  moderationCheck,
  parseModerationAnswer,
  type ModerationAnswer,
  type ModerationCheckOptions,
} from './guardrails/moderation.js';
