/**
 * `cubepi/operators`: the RxJS operators cubepi is built from, public so users can compose and marble-test them.
 * @module
 */
export { assembleMessages } from './assemble-messages.js';
export { appendToCheckpoint, type AppendToCheckpointOptions, type CheckpointWriter } from './append-to-checkpoint.js';
export { chainedRule, chainHooks } from './chain-hooks.js';
export { elements, type ElementAt } from './elements.js';
export { executeToolCalls, type IndexedOutcome } from './execute-tool-calls.js';
export { finalMessage } from './final-message.js';
export { foldHooks, type HookRule } from './fold-hooks.js';
export { firstBlockWinsRule, gateToolCall, isFinalGateAnswer, type GateDecision } from './gate-tool-call.js';
export { lastHookWins } from './last-hook-wins.js';
export {
  fieldWiseMergeRule,
  mergeToolResultPatch,
  mergeToolResults,
  type ToolResultPatch,
} from './merge-tool-results.js';
export {
  chainedMergeRule,
  mergeTurnAction,
  mergeTurnActions,
  type MergedTurnAction,
  type TurnActionLike,
} from './merge-turn-actions.js';
export { numberEvents } from './number-events.js';
export { ofType } from './of-type.js';
export { partialOutput, type DeepPartial, type OutputTypeOf, type PartialOutput } from './partial-output.js';
export { anyTrueStopsRule, stopWhenAny } from './stop-when-any.js';
export { textDeltas, thinkingDeltas } from './text-deltas.js';
export { throttleDeltas } from './throttle-deltas.js';
export { toAgUiEvents, type AgUiEvent, type ToAgUiOptions } from './to-ag-ui-events.js';
export { toUIMessageStream, type UIMessageStreamPart } from './to-ui-message-stream.js';
export { toolActivity, type ToolActivity } from './tool-activity.js';
