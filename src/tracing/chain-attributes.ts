/**
 * The middleware chain of `agent_start` as span attributes: its compact text, and each middleware's version.
 * @module
 */
import type { MiddlewareChain } from '../types/middleware-chain.js';

/** What a recorder keeps of one chain: it is shared by every run of an Agent, so this is computed once per chain. */
export interface ChainAttributes {
  /** `beforeToolCall=ToolGuard@1.2.0,Audit;afterToolCall=Audit`: hooks in firing order, then the wrappers. */
  readonly text: string;
  /** The declared version of each middleware that has one, by name. */
  readonly versions: ReadonlyMap<string, string>;
}

const cache = new WeakMap<MiddlewareChain, ChainAttributes>();

/** The attributes of `chain`, computed at its first run and kept while the chain lives. @internal */
export function chainAttributes(chain: MiddlewareChain): ChainAttributes {
  let attributes = cache.get(chain);
  if (attributes === undefined) {
    const parts: string[] = [];
    const versions = new Map<string, string>();
    for (const [hook, links] of Object.entries(chain)) {
      if (links === undefined) continue;
      parts.push(
        `${hook}=${links.map((link) => (link.version === undefined ? link.name : `${link.name}@${link.version}`)).join(',')}`,
      );
      for (const link of links) if (link.version !== undefined) versions.set(link.name, link.version);
    }
    attributes = { text: parts.join(';'), versions };
    // A chain that came over the wire is not frozen, nor shared: caching it would only keep it alive longer.
    if (Object.isFrozen(chain)) cache.set(chain, attributes);
  }
  return attributes;
}
