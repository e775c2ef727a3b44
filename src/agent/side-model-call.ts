/**
 * A model call a middleware makes of its own (a compaction's summary), through the run's wrappers.
 * @module
 */
import { defer, type Observable } from 'rxjs';
import type { ComposedModelCall } from '../middleware/compose-wrappers.js';
import type { HookContext } from '../middleware/hook-context.js';
import type { SideModelRequest } from '../middleware/hook-sink.js';
import type { ModelCallNext, ModelRequest } from '../middleware/wrapper-types.js';
import type { AgentEvent } from '../types/agent-events.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';

/** What a side call needs of its run (a `RunState` is one). */
export interface SideCallRun {
  readonly runId: string;
  readonly provider: Provider;
  readonly model: Model;
  readonly signal: AbortSignal;
  readonly wrapModelCall: ComposedModelCall | undefined;
  readonly emit: (event: AgentEvent) => void;
}

/**
 * Sends `side` (the run's provider and model unless it names others; no tools unless given) through the run's
 * model-call onion (when it has one) to its provider: every attempt is announced (`model_attempt` under
 * `invocationId`), the run's signal aborts it, and unsubscribing aborts it. Cold. The wrappers' context is the turn's
 * (`context()`) with `invocationId` and `purpose`, so a wrapper that reshapes the turn's own call can let it through.
 */
export function sideModelCall(
  run: SideCallRun,
  turnIndex: number,
  context: () => HookContext,
  side: SideModelRequest,
  purpose: string,
  invocationId: string,
): Observable<StreamEvent> {
  return defer(() => {
    const request: ModelRequest = {
      ...side,
      provider: side.provider ?? run.provider,
      model: side.model ?? run.model,
      tools: side.tools ?? [],
    };
    let attempt = 0;
    const send: ModelCallNext = (req) =>
      defer(() => {
        attempt++;
        run.emit({
          type: 'model_attempt',
          runId: run.runId,
          turnIndex,
          invocationId,
          attemptId: `${invocationId}.${attempt}`,
          attempt,
          provider: req.provider.id,
          model: req.model.id,
        });
        return req.provider.stream(req.model, req.messages, {
          systemPrompt: req.systemPrompt,
          tools: req.tools,
          ...(req.toolChoice !== undefined ? { toolChoice: req.toolChoice } : {}),
          options: { ...req.options, signal: run.signal },
        });
      });
    if (run.wrapModelCall === undefined) return send(request);
    return run.wrapModelCall(request, { ...context(), invocationId, purpose }, send);
  });
}
