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
