/**
 * A model call a middleware makes of its own (a compaction's summary), through the run's wrappers.
 * @module
 */
import { defer, type Observable } from 'rxjs';
import type { SideModelRequest } from '../middleware/hook-sink.js';
import type { ModelCallNext, ModelRequest } from '../middleware/wrapper-types.js';
import type { StreamEvent } from '../types/stream-events.js';
import { hookContext, type RunState } from './run-state.js';

/**
 * Sends `request` through the run's model-call onion (when it has one) to its provider: every attempt is announced
 * (`model_attempt` under `invocationId`), the run's signal aborts it, and unsubscribing aborts it. Cold. The
 * wrappers' context carries `purpose`, so a wrapper that reshapes the turn's own call can let it through.
 */
export function sideModelCall(
  run: RunState,
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
    const turnIndex = run.turn?.index ?? run.turnIndex;
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
    return run.wrapModelCall(request, { ...hookContext(run, turnIndex), invocationId, purpose }, send);
  });
}
