/**
 * The typed answer in the loop: a turn's final answer checked against the run's `output` (its text, or in `tool`
 * mode the final tool's call), counted against `outputRetries`, and the model asked again while they allow.
 * @module
 */
import { isPromiseLike } from '../types/is-promise-like.js';
import { textOf, userMessage, type AssistantMessage } from '../types/messages.js';
import { finishCall } from './call-records.js';
import { wait, type Op } from './drive.js';
import { issuesText, parseAnswerText, validateAnswer, type AnswerCheck } from './output-answer.js';
import { addMessage, errorOutcome, type RunState, type TurnState } from './run-state.js';

/** What a checked answer means for the run: it ends with the value, the model is asked again, or the budget is spent. */
export type AnswerVerdict = 'done' | 'retry' | 'spent';

const UNFINISHED: AnswerCheck = { ok: false, issues: [{ path: [], message: 'the validation did not finish' }] };

/**
 * Counts a checked answer: a valid one settles the run's answer; an invalid one emits `output_invalid` (with
 * `retrying` while the run's `outputRetries` allow another answer) and keeps its issues for `agent_end.outputError`.
 */
export function recordAnswer(run: RunState, turnIndex: number, check: AnswerCheck): AnswerVerdict {
  const answer = run.answer!;
  answer.attempts++;
  if (check.ok) {
    answer.done = true;
    answer.value = check.value;
    answer.issues = [];
    return 'done';
  }
  answer.issues = check.issues;
  // `outputRetries` counts the answers asked again: the first answer plus that many.
  const retrying = answer.attempts <= run.outputRetries;
  if (!retrying) answer.spent = true;
  run.emit({
    type: 'output_invalid',
    runId: run.runId,
    turnIndex,
    attempt: answer.attempts,
    issues: check.issues,
    retrying,
  });
  return retrying ? 'retry' : 'spent';
}

/**
 * Checks the final text answer of turn `turn` (a response without tool calls). On `retry`, the model is asked again
 * with a user message listing the issues (added to the transcript before the turn ends). In `tool` mode the answer was
 * expected as the final tool's call: text that is a valid value is taken all the same; anything else is asked again,
 * naming the tool.
 */
export function* checkTextAnswer(run: RunState, turn: TurnState, final: AssistantMessage): Op<AnswerVerdict> {
  const plan = run.outputPlan!;
  const toolName = turn.attemptOutput?.mode === 'tool' ? turn.attemptOutput.toolName : undefined;
  const parsed = parseAnswerText(textOf(final));
  let check: AnswerCheck;
  if (!parsed.ok) {
    check =
      toolName === undefined
        ? parsed
        : { ok: false, issues: [{ path: [], message: `no answer: give it by calling the ${toolName} tool` }] };
  } else {
    const checked = validateAnswer(plan, parsed.json, false);
    check = isPromiseLike(checked) ? ((yield wait(checked, UNFINISHED)) as AnswerCheck) : checked;
  }
  const verdict = recordAnswer(run, turn.index, check);
  if (verdict === 'retry' && !check.ok) {
    const how =
      toolName === undefined
        ? 'Answer again with only the corrected JSON value.'
        : `Call the ${toolName} tool with the corrected answer.`;
    // Like a message a hook injects: after the turn's results, before the next model call.
    addMessage(run, userMessage(`Your answer is not valid:\n${issuesText(check.issues)}\n${how}`));
  }
  return verdict;
}

/**
 * Answers call `index` of the turn, a call of the final tool (`tool` mode), in place of running a tool: its arguments
 * are the answer, checked and counted ({@link recordAnswer}). It gets exactly one result — `Answer recorded.` for a
 * valid answer, an error result with the issues otherwise — so the transcript stays consistent. A second final call
 * in a batch whose answer is already valid is told so and not counted.
 */
export function* answerFinalCall(run: RunState, turn: TurnState, index: number): Op<void> {
  const plan = run.outputPlan!;
  const call = turn.calls[index]!;
  if (turn.finalAnswer?.ok === true) {
    finishCall(run, turn, index, errorOutcome('An answer was already recorded in this response; this one is ignored.'));
    return;
  }
  let check: AnswerCheck;
  if (call.invalidArguments !== undefined) {
    check = { ok: false, issues: [{ path: [], message: 'the arguments are not valid JSON' }] };
  } else {
    const checked = validateAnswer(plan, call.arguments, true);
    check = isPromiseLike(checked) ? ((yield wait(checked, UNFINISHED)) as AnswerCheck) : checked;
  }
  turn.finalAnswer = check;
  const verdict = recordAnswer(run, turn.index, check);
  if (check.ok) {
    finishCall(run, turn, index, {
      result: { content: [{ type: 'text', text: 'Answer recorded.' }] },
      isError: false,
      outcome: 'ok',
    });
    return;
  }
  const how = verdict === 'retry' ? `\nCall ${call.name} again with the corrected answer.` : '';
  finishCall(run, turn, index, errorOutcome(`The answer is not valid:\n${issuesText(check.issues)}${how}`));
}
