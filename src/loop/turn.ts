/**
 * One turn of the loop: the messages it starts with, the context and system prompt through their hooks, the model
 * call, \`afterModelResponse\`, the tool batch, and what the loop does next.
 * @module
 */
import type { TurnDecision } from '../middleware/types.js';
import { renderFragments } from '../types/apply-patch.js';
import {
  isRecordOnly,
  toolCallsOf,
  type AssistantMessage,
  type Message,
  type ToolResultMessage,
} from '../types/messages.js';
import { wait, type Op } from './drive.js';
import { addMessage, callHook, newTurn, turnContext, type RunState, type TurnState } from './run-state.js';
import { useTools } from './use-tools.js';
import { streamResponse } from './stream-response.js';
import { resolveBlobs } from './resolve-blobs.js';
import { answerUnexecuted, runToolBatch } from './tool-batch.js';
import { endTurn } from './close-run.js';
import { checkTextAnswer, type AnswerVerdict } from './output-turn.js';

/** What a turn tells the loop: stop the run, call the model again, go on only if something is queued, or suspend. */
export type TurnOutcome = 'end' | 'more' | 'idle' | 'suspend';

export function* turn(run: RunState, pending: readonly Message[]): Op<TurnOutcome> {
  run.outcome = undefined; // how the run ends is decided by its last turn
  const state = newTurn(run.turnIndex++);
  run.turn = state;
  const handoffs = run.handoffs;
  run.emit(
    handoffs === undefined
      ? { type: 'turn_start', runId: run.runId, turnIndex: state.index, seq: 0 }
      : { type: 'turn_start', runId: run.runId, turnIndex: state.index, agent: handoffs.active, seq: 0 },
  );
  for (let i = 0; i < pending.length; i++) addMessage(run, pending[i]!);
  if (run.signal.aborted) throw run.signal.reason;
  // The tool set changes between turns only: read once here, so the hooks, the model call and the batch agree.
  if (run.getTools !== undefined) useTools(run, run.getTools());

  const { hooks } = run;
  // Context fragments (from state patches) follow the system prompt, before transformSystemPrompt sees it.
  const fragments = run.state.contextFragments;
  let systemPrompt = fragments.length === 0 ? run.systemPrompt : renderFragments(run.systemPrompt, fragments);
  // Without hooks the provider gets the transcript itself, not a copy: a copy per model call would make a run
  // O(turns²). It does not change while the call is in flight (the loop appends only after the terminal event);
  // a provider that keeps it beyond its call must copy it (the Provider contract says so).
  let context: readonly Message[] = run.transcript;
  if (
    hooks.transformContext !== undefined ||
    hooks.convertToLlm !== undefined ||
    hooks.transformSystemPrompt !== undefined
  ) {
    // The request hooks in a generator of their own: `turn` stays small (its optimised code is compiled once per run,
    // and its size is what that costs).
    const request = yield* transformRequest(run, state, systemPrompt);
    context = request.context;
    systemPrompt = request.systemPrompt;
  }

  // Files stored by reference get their bytes back: providers never see a `ref`. A context without any (checked
  // incrementally, without a generator) is sent as it is.
  const refs = run.blobs.refsIn(context);
  if (refs.length > 0) context = yield* resolveBlobs(run.blobs, context, refs);
  const response = yield* streamResponse(run, state, context, systemPrompt);
  if (run.spend !== undefined) run.spend(response.usage);
  if (isRecordOnly(response)) {
    // A blocked answer is not a failure: the vendor's policy stopped the run (the message says why).
    run.outcome =
      response.stopReason === 'error' ? 'failed' : response.stopReason === 'blocked' ? 'stopped' : 'cancelled';
    endTurn(run, state, response, []);
    return 'end';
  }

  let final: AssistantMessage = response;
  let inject: readonly Message[] = [];
  let decision: TurnDecision = 'natural';
  if (hooks.afterModelResponse !== undefined) {
    const after = hooks.afterModelResponse;
    const ctx = turnContext(run, state);
    const action = yield* callHook(run, 'afterModelResponse', response, () => after(response, ctx), undefined);
    if (action !== undefined) {
      final = action.response ?? response;
      inject = action.injectMessages ?? [];
      decision = action.decision ?? 'natural';
    }
  }
  state.response = undefined;
  state.assistant = final;
  run.transcript.push(final);
  run.newMessages.push(final);
  run.emit({ type: 'message_end', runId: run.runId, message: final, seq: 0 });

  const calls = toolCallsOf(final);
  let results: readonly ToolResultMessage[] = [];
  let terminate = false;
  if (calls.length > 0) {
    if (decision === 'stop') {
      results = answerUnexecuted(
        run,
        state,
        calls,
        'Tool call not executed: the run was stopped after this response',
        'aborted',
      ).results;
    } else if (final.stopReason === 'length') {
      results = answerUnexecuted(
        run,
        state,
        calls,
        'Tool call not executed: the response hit the output token limit, so its arguments may be cut off. Re-issue the call.',
        'error',
      ).results;
    } else {
      // The calls are stored before any of them runs (a crash then leaves calls the next process knows).
      const stored = run.untilStored?.();
      if (stored !== undefined) yield wait(stored, undefined);
      const batch = yield* runToolBatch(run, state, final, calls);
      if (batch.held.length > 0) {
        // Suspended: the held calls get no result in this run (the turn is not over: no turn_end); messages a hook
        // injected go after the resumed batch's results, so a call and its result stay adjacent.
        state.deferred = inject;
        return 'suspend';
      }
      results = batch.results;
      terminate = batch.terminate;
    }
  }
  for (let i = 0; i < inject.length; i++) addMessage(run, inject[i]!);
  // A run with `output`: a final answer (text, or the final tool's call, checked in the batch) settles the run, or is
  // asked again. A turn another hook decided on (`stop`, `loop_to_model`) is not an answer.
  let verdict: AnswerVerdict | undefined;
  if (run.outputPlan !== undefined && decision === 'natural') {
    if (state.finalAnswer !== undefined)
      verdict = state.finalAnswer.ok ? 'done' : run.answer!.spent ? 'spent' : 'retry';
    else if (calls.length === 0) verdict = yield* checkTextAnswer(run, state, final);
  }
  endTurn(run, state, final, results);

  if (decision === 'stop') {
    run.outcome = 'stopped';
    return 'end';
  }
  if (verdict === 'done') return 'end';
  if (verdict === 'spent') {
    run.outcome = 'failed';
    return 'end';
  }
  if (hooks.shouldStopAfterTurn !== undefined && (yield* stopAfterTurn(run, state, final, results))) {
    run.outcome = 'stopped';
    return 'end';
  }
  if (decision === 'loop_to_model' || verdict === 'retry') return 'more';
  if (terminate) run.outcome = 'stopped';
  return calls.length > 0 && !terminate ? 'more' : 'idle';
}

/**
 * The request hooks of a turn, in order: `transformContext` and `convertToLlm` on the context (each on a copy), then
 * `transformSystemPrompt` on `rendered` (the system prompt with the context fragments rendered after it).
 */
function* transformRequest(
  run: RunState,
  state: TurnState,
  rendered: string,
): Op<{ context: readonly Message[]; systemPrompt: string }> {
  const { hooks } = run;
  let context: readonly Message[] = run.transcript;
  if (hooks.transformContext !== undefined) {
    const transform = hooks.transformContext;
    const ctx = turnContext(run, state);
    const input = run.transcript.slice();
    context = yield* callHook(run, 'transformContext', input, () => transform(input, ctx), input);
  }
  if (hooks.convertToLlm !== undefined) {
    const convert = hooks.convertToLlm;
    const ctx = turnContext(run, state);
    const input = context.slice();
    context = yield* callHook(run, 'convertToLlm', input, () => convert(input, ctx), input);
  }
  let systemPrompt = rendered;
  if (hooks.transformSystemPrompt !== undefined) {
    const transform = hooks.transformSystemPrompt;
    const ctx = turnContext(run, state);
    const input = systemPrompt;
    systemPrompt = yield* callHook(run, 'transformSystemPrompt', input, () => transform(input, ctx), input);
  }
  return { context, systemPrompt };
}

/** Whether the run's `shouldStopAfterTurn` hook stops the run after turn `state` (ending with `final`). */
function* stopAfterTurn(
  run: RunState,
  state: TurnState,
  final: AssistantMessage,
  results: readonly ToolResultMessage[],
): Op<boolean> {
  const shouldStop = run.hooks.shouldStopAfterTurn!;
  const ctx = turnContext(run, state);
  const turnEnd = {
    ...ctx,
    message: final,
    toolResults: results,
    newMessages: run.newMessages.slice(),
    context: ctx,
  };
  const stop = yield* callHook(run, 'shouldStopAfterTurn', { message: final }, () => shouldStop(turnEnd), false);
  return stop === true;
}
