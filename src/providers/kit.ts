/**
 * `cubepi/providers/kit`: what cubepi's own providers are built from, for writing yours (docs/provider-kit.md).
 *
 * - {@link fromSdkStream}: a request as a cold Observable of stream events: the request, cancellation, stall limits
 *   and error classification, around a {@link WireMapper} that knows only your wire.
 * - {@link MessageAssembler}: builds the assistant message block by block and returns each stream event, with its
 *   immutable `partial` snapshot and tolerant previews of tool-call arguments.
 * - {@link classifyError}, {@link classifyErrorCode} and {@link parseRetryAfter}: a failure as the terminal `error`
 *   event's `errorKind` and `retryAfterMs`.
 * - {@link stallTimeouts}: a request's stall limits, from its `StreamOptions` and the model.
 * - {@link parsePartialJson} and {@link parseToolArguments}: the tolerant and the strict parse of tool-call arguments;
 *   {@link PartialJsonParser}: the tolerant parse delta by delta (O(n) for a text of n characters however it is cut).
 *
 * Browser-safe: the kit loads no vendor SDK and no `node:` module (an SDK's error classes are passed in).
 *
 * @example
 * import { fromSdkStream, stallTimeouts, type MessageAssembler, type WireMapper } from 'cubepi/providers/kit';
 * @module
 */
export {
  DEFAULT_REASONING_STALL_TIMEOUT_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  fromSdkStream,
  stallTimeouts,
  type SdkStreamSpec,
  type StallTimeouts,
  type WireMapper,
} from './from-sdk-stream.js';
export { MessageAssembler, type MessageAssemblerInit } from './message-assembler.js';
export { classifyError, classifyErrorCode, type ErrorClassification, type SdkErrorClasses } from './classify-error.js';
export { parseRetryAfter, type HeadersLike } from './parse-retry-after.js';
export { parsePartialJson, parseToolArguments, PartialJsonParser, type ToolArgumentsParse } from './partial-json.js';
