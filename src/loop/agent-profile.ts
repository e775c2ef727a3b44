/**
 * What a run takes from an Agent when that agent is the thread's active one (after a handoff): its provider, model,
 * system prompt, tools and composed middleware. Kept off the Agent's public surface, in a WeakMap the Agent fills at
 * construction.
 * @module
 */
import type { ComposedMiddleware } from '../middleware/compose-middleware.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { AnyAgentTool } from '../types/tool.js';

/** An Agent's configuration, as a run of another Agent's thread uses it once it is active. */
export interface AgentProfile {
  /** The agent's `name` option. */
  readonly name: string | undefined;
  readonly provider: Provider;
  readonly model: Model;
  readonly systemPrompt: string;
  /** Its tools as they are now (`setTools` included): read at the start of each turn. */
  readonly getTools: () => readonly AnyAgentTool[];
  readonly middleware: ComposedMiddleware;
}

const profiles = new WeakMap<object, () => AgentProfile>();

/** Called by the Agent's constructor. */
export function registerProfile(agent: object, profile: () => AgentProfile): void {
  profiles.set(agent, profile);
}

/** The profile of an Agent, or `undefined` for anything that is not one. */
export function profileOf(agent: object): AgentProfile | undefined {
  return profiles.get(agent)?.();
}
