/**
 * `cubepi/testing`: a scripted provider and helpers for testing agents, tools and middleware.
 * @module
 */
export {
  checkpointerConformance,
  type CheckpointerConformanceOptions,
  type CheckpointerFixture,
} from './checkpointer-conformance.js';
export {
  blobStoreConformance,
  type BlobStoreConformanceOptions,
  type BlobStoreFixture,
} from './blob-store-conformance.js';
export {
  storeConformance,
  type MakeStore,
  type StoreConformanceOptions,
  type StoreFixture,
} from './store-conformance.js';
export { providerConformance, type ProviderConformanceOptions } from './provider-conformance.js';
export {
  sseEvent,
  type ConformanceWire,
  type WireReply,
  type WireToolCall,
  type WireUsage,
} from './conformance-wire.js';
export type { CreateServerLike, IncomingLike, ResponseLike, ServerLike } from './conformance-server.js';
export { anthropicMessagesWire } from './anthropic-messages-wire.js';
export { openAIChatWire } from './openai-chat-wire.js';
export { openAIResponsesWire } from './openai-responses-wire.js';
export { geminiWire } from './gemini-wire.js';
export {
  FauxProvider,
  type FauxCallContext,
  type FauxProviderOptions,
  type FauxResponse,
} from '../providers/faux-provider.js';
export {
  fauxMessage,
  fauxText,
  fauxThinking,
  fauxToolCall,
  type FauxMessageOptions,
} from '../providers/faux-messages.js';
export {
  createTestScheduler,
  runOneTurn,
  spyHook,
  toMarbles,
  type ExpectLike,
  type RunOneTurnOptions,
  type SpyHook,
} from './marbles.js';
