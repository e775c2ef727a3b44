/**
 * `supervise`: a manager agent with worker agents as its tools, on one budget.
 * @module
 */
import { Observable } from 'rxjs';
import { ConfigurationError } from '../../types/errors.js';
import type { AnyAgentTool } from '../../types/tool.js';
import { Agent } from '../agent.js';
import { agentTool, subagentEventOf, type AgentToolOptions } from '../agent-tool.js';
import type { CompositeEvent } from './composite-events.js';
import { validateBudget, type CompositeOptions, type MemberContext, type ResolvedMember } from './composite-member.js';
import { CompositeRun } from './composite-run.js';
import type { Composite } from './run-composite.js';

/** A worker of {@link supervise}: the options of an `agentTool` (name, description, `agent` or `createAgent`, …). */
export type Worker = AgentToolOptions;

/** What a manager factory is told: the member's context and the worker tools to give the manager. */
export interface ManagerContext extends MemberContext {
  readonly tools: readonly AnyAgentTool[];
}

/**
 * The manager of {@link supervise}: an Agent (its tools are set to its own plus the workers' at each run, replacing
 * tools of the same names) or a factory that builds one with `tools` (called at each run).
 */
export type Manager = Agent | ((context: ManagerContext) => Agent);

/**
 * Offers the workers to the manager as tools (built with `agentTool`: docs/subagents.md) and runs the manager on the
 * composite's input; its answer is the composite's.
 *
 * - **Events.** The manager's events are `member_event`s with path `['supervise', 0, 'manager']`; a worker's (unwrapped
 *   from the manager's `tool_execution_update`) have path `['supervise', i, <worker>, <toolCallId>]`, `i` counting
 *   workers from 1 in the order given.
 * - **One budget.** `budget` bounds the manager and every worker together: each model call of either is counted as it
 *   ends, and when the total reaches the bound the manager and every running worker are cancelled at once (provider
 *   requests aborted); the composite ends `stopped` (`stop.reason` `budget`).
 * - **Failures.** A worker that fails is an error tool result the manager's model sees (and can react to), as with
 *   any agent tool; the manager failing fails the composite with a `CompositeMemberError` naming `manager`. A manager
 *   that suspends for an approval ends the composite `suspended`; a worker that does gives an error result.
 *
 * Throws `ConfigurationError` for a manager that is not an Agent or a function, no workers, duplicate names, or bad
 * worker options (as `agentTool` does).
 *
 * @example
 * const desk = supervise(lead, [
 *   { name: 'billing', description: 'Answers billing questions', createAgent: () => billingAgent() },
 *   { name: 'tech', description: 'Answers technical questions', createAgent: () => techAgent() },
 * ], { budget: { tokens: 20_000 } });
 */
export function supervise(manager: Manager, workers: readonly Worker[], options?: CompositeOptions): Composite {
  if (!(manager instanceof Agent) && typeof manager !== 'function') {
    throw new ConfigurationError('supervise: the manager is not an Agent or a function returning one');
  }
  if (!Array.isArray(workers) || workers.length === 0)
    throw new ConfigurationError('supervise: give at least one worker');
  validateBudget('supervise', options?.budget);
  const tools = (workers as readonly Worker[]).map((worker) => agentTool(worker));
  const names = tools.map((tool) => tool.name);
  if (names.includes('manager') || new Set(names).size !== names.length) {
    throw new ConfigurationError('supervise: workers need distinct names, none of them "manager"');
  }
  const workerIndex = new Map(names.map((name, index) => [name, index + 1]));
  const source =
    manager instanceof Agent
      ? (): Agent => {
          manager.setTools([...manager.state.tools.filter((tool) => !workerIndex.has(tool.name)), ...tools]);
          return manager;
        }
      : (context: MemberContext): Agent => manager({ ...context, tools });
  const members: ResolvedMember[] = [{ name: 'manager', source }];
  return {
    kind: 'supervise',
    members: ['manager', ...names],
    run$: (input, runOptions) =>
      new Observable<CompositeEvent>((subscriber) => {
        const run = new CompositeRun('supervise', members, subscriber, runOptions, options?.budget);
        run.start(['manager', ...names]);
        const sub = run.runMember(
          0,
          input,
          (result, end) => {
            const results = [result];
            if (!run.endUnlessAnswered(result, end, results)) {
              run.end({ outcome: 'completed', answer: result.answer, results });
            }
          },
          (event) => {
            const nested = subagentEventOf(event);
            const index = nested === undefined ? undefined : workerIndex.get(nested.toolName);
            if (nested === undefined || index === undefined) return true;
            run.emitMember(index, nested.toolName, nested.event, [nested.toolCallId]);
            return false;
          },
        );
        return () => sub?.unsubscribe();
      }),
  };
}
