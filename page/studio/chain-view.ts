/**
 * The agent's middleware chain, as the runtime reports it. (Skeleton: the timeline helper fills this in.)
 * @module
 */
import type { MiddlewareChain } from '../../src/types/middleware-chain.js';

/** Draws `chain` (per hook and wrapper, its middlewares in firing order) into `container`. */
export function renderChain(container: HTMLElement, chain: MiddlewareChain | null): void {
  void chain;
  container.textContent = 'middleware chain: not built yet';
}
