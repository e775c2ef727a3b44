/**
 * A model call a middleware makes of its own (a compaction's summary), through the run's wrappers.
 * @module
 */
import { defer, from, switchMap, tap, type Observable } from 'rxjs';
import type { BlobResolver } from './resolve-blobs.js';
import type { ComposedModelCall } from '../middleware/compose-wrappers.js';
import type { HookContext } from '../middleware/hook-context.js';
import type { SideModelRequest } from '../middleware/hook-sink.js';
import type { ModelCallNext, ModelRequest } from '../middleware/wrapper-types.js';
import type { AgentEvent, PreviousAttempt } from '../types/agent-events.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { addUsage, type Usage } from '../types/usage.js';

/** What a side call needs of its run (a `RunState` is one). */
export interface SideCallRun {
  readonly runId: string;
  /** What the run's side calls spent so far (each attempt's final usage is added). */
  sideUsage: Usage;
  /** Counts spend against the run's budget (and its parent's), when it has one. */
  readonly spend: ((usage: Usage) => void) | undefined;
  readonly provider: Provider;
  readonly model: Model;
  readonly signal: AbortSignal;
  readonly wrapModelCall: ComposedModelCall | undefined;
  readonly emit: (event: AgentEvent) => void;
  /** Resolves file blocks stored by reference before the call (a run's own resolver: providers never see a `ref`). */
  readonly blobs?: BlobResolver | undefined;
}

/**
 * Sends `side` (the run's provider and model unless it names others; no tools unless given) through the run's
 * model-call onion (when it has one) to its provider: every attempt is announced (`model_attempt` under
 * `invocationId`), the run's signal aborts it, and unsubscribing aborts it; what each attempt spends is added to the
 * run's `sideUsage` (its `agent_end.usage`) and counted against its budget. Cold. The wrappers' context is the turn's
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
    // How the attempt before ended, for the next `model_attempt` (what a retry or a fallback reacted to).
    let previous: PreviousAttempt | undefined;
    const send: ModelCallNext = (req) =>
      defer(() => {
        const attemptId = `${invocationId}.${++attempt}`;
        run.emit({
          type: 'model_attempt',
          runId: run.runId,
          turnIndex,
          invocationId,
          attemptId,
          attempt,
          provider: req.provider.id,
          model: req.model.id,
          ...(previous !== undefined ? { previous } : {}),
        });
        previous = { attemptId };
        const stream = req.provider.stream(req.model, req.messages, {
          systemPrompt: req.systemPrompt,
          tools: req.tools,
          ...(req.toolChoice !== undefined ? { toolChoice: req.toolChoice } : {}),
          options: { ...req.options, signal: run.signal },
        });
        return stream.pipe(
          tap((event) => {
            if (event.type !== 'done' && event.type !== 'error') return;
            // Every attempt's spend counts, a failed one's too (its usage so far), like the turn's own calls.
            run.sideUsage = addUsage(run.sideUsage, event.message.usage);
            run.spend?.(event.message.usage);
            if (event.type !== 'error') return;
            const error = event.message.errorMessage;
            previous = { attemptId, errorKind: event.errorKind, ...(error !== undefined ? { error } : {}) };
          }),
        );
      });
    const call = (resolved: ModelRequest) =>
      run.wrapModelCall === undefined
        ? send(resolved)
        : run.wrapModelCall(resolved, { ...context(), invocationId, purpose }, send);
    // Messages from the stored transcript may hold refs: their bytes first (a BlobMissingError errors the call).
    const refs = run.blobs?.refsIn(request.messages) ?? [];
    if (refs.length === 0) return call(request);
    return from(run.blobs!.resolve(request.messages, refs)).pipe(
      switchMap((messages) => call({ ...request, messages })),
    );
  });
}
