/**
 * `cubepi/operators`: the RxJS operators cubepi is built from, public so users can compose and marble-test them.
 * @module
 */
export { executeToolCalls, type IndexedOutcome } from './execute-tool-calls.js';
export { finalMessage } from './final-message.js';
export { ofType } from './of-type.js';
export { textDeltas, thinkingDeltas } from './text-deltas.js';
