import { Observable, type OperatorFunction } from 'rxjs';
import type { AgentEvent } from '../src/types/agent-events.js';
import type { AttemptOutput, InferOutput, OutputSpec } from '../src/types/output.js';
import { PartialJsonParser } from './partial-json-parser.js';

/**
 * A value of `T` being written: every property optional, all the way down (an array's elements too), as an answer
 * streams in. Read-only: the values {@link partialOutput} emits are frozen.
 */
export type DeepPartial<T> = T extends readonly (infer E)[]
  ? readonly DeepPartial<E>[]
  : T extends object
    ? { readonly [K in keyof T]?: DeepPartial<T[K]> }
    : T;

declare const outputType: unique symbol;

/**
 * What {@link partialOutput} emits for an answer of type `T`: a {@link DeepPartial} of it, which also remembers `T`
 * (a property that exists only in the types) so that {@link elements} can type the elements it follows.
 */
export type PartialOutput<T> = unknown extends T ? unknown : DeepPartial<T> & { readonly [outputType]?: T };

/** The answer type a {@link PartialOutput} remembers (`unknown` for any other type). */
export type OutputTypeOf<V> = V extends { readonly [outputType]?: infer T } ? T : unknown;

/** Which answer of a stream each emitted object belongs to (see `elements`, which starts over on a new answer). */
const answers = new WeakMap<object, number>();
let answerCount = 0;

/** The answer an object emitted by {@link partialOutput} belongs to (`undefined` for any other value). */
export function answerOf(value: unknown): number | undefined {
  return typeof value === 'object' && value !== null ? answers.get(value) : undefined;
}

/**
 * A run's typed answer while it is written: from the run's events, a stream of deep-partial values of the answer,
 * each emitted only when it differs (structurally) from the one before, the last equal to the validated answer. While
 * the open containers are wide (an array of thousands of items being written), values are spaced: the next is built
 * once the text has grown by 1/32 of what the last one copied, so building them costs O(n) over the answer; no change
 * is lost, and a message's last value is built at its `message_end`.
 *
 * Where the JSON comes from is what each `model_attempt` says (`output.mode`): in `native` and `prompt` mode the
 * assistant message's text deltas (in `prompt` mode, text before the first `{` or `[` — a Markdown fence, a sentence —
 * is skipped, and so is what follows the value); in `tool` mode the argument deltas of the call to the final tool
 * (`output.toolName`). An attempt without `output` (a run without `output`) gives nothing. The text is parsed
 * incrementally ({@link PartialJsonParser}: each delta is read once, so an answer of n characters costs O(n) to parse
 * however it is cut), under the rule of the providers' argument previews: open strings, arrays and objects closed, a
 * key without a value or an incomplete number or literal left out.
 *
 * Each assistant message starts a new answer: a message that turns out to be a tool round, or a retry after
 * `output_invalid`, is followed by the next message's values from the start (its first value is smaller than the last
 * one emitted). At `agent_end`, the validated answer (`agent_end.output`) is emitted if it differs from the last value
 * (a schema's defaults and transforms apply to it only); a run that ends without one emits nothing more. The values
 * are frozen and share structure: a part that was complete is the same object in every later value.
 *
 * The schema types the values (`partialOutput(schema)`, or `partialOutput<T>()`); it is not used to validate them (a
 * value being written is rarely valid yet). Errors and completion pass through.
 *
 * ```
 * source:  -a-s-u-u-u-e-|     (a: model_attempt { output: { mode: 'native' } }, s: message_start,
 *                              u: text deltas '{"n":"A', 'b"', ',"k":[1', e: agent_end { output: { n: 'Ab', k: [1] } })
 * partialOutput(schema)
 * result:  -----x-----y-|     (x: { n: 'A' }, y: { n: 'Ab', k: [1] }; the delta 'b"' makes { n: 'Ab' }: z, between)
 * ```
 *
 * @example
 * agent.prompt$('Plan my trip', { output: Trip }).pipe(partialOutput(Trip)).subscribe((trip) => render(trip));
 */
export function partialOutput<S extends OutputSpec>(
  spec: S,
): OperatorFunction<AgentEvent, PartialOutput<InferOutput<S>>>;
export function partialOutput<T = unknown>(): OperatorFunction<AgentEvent, PartialOutput<T>>;
export function partialOutput(): OperatorFunction<AgentEvent, unknown> {
  return (source) =>
    new Observable<unknown>((subscriber) => {
      const runs = new Map<string, RunAnswers>();
      let last: unknown;
      let lastAnswer: number | undefined;
      let emitted = false;
      const emit = (value: unknown, answer: number, changed = false) => {
        // Within one answer the parser knows a change exactly (no walk over the values); the first value of a new
        // answer and the validated one are compared.
        if (emitted && !(changed && lastAnswer === answer) && jsonEqual(last, value)) return;
        lastAnswer = answer;
        emitted = true;
        last = value;
        if (typeof value === 'object' && value !== null && !answers.has(value)) answers.set(value, answer);
        subscriber.next(value);
      };
      // Building a value copies the open containers: when they are wide (an array of thousands of items being
      // written), a value per delta would cost O(n²) over the answer. So the next value is built once the text has
      // grown by 1/WIDTH_PER_CHARACTER of what the last one copied (every delta while they are narrow): O(n) in total.
      // Nothing is lost: the next value has every change, and a message's last value is built at its end.
      const flush = (answer: Answer) => {
        if (!answer.pending) return;
        answer.pending = false;
        answer.waited = 0;
        const value = answer.parser.value;
        answer.wait = Math.floor(answer.parser.lastBuildSize / WIDTH_PER_CHARACTER);
        if (value !== undefined) emit(value, answer.id, true);
      };
      return source.subscribe({
        next: (event) => {
          switch (event.type) {
            case 'model_attempt': {
              const run = runs.get(event.runId) ?? { output: undefined, answer: undefined, lastAnswer: undefined };
              run.output = event.output;
              run.answer = undefined;
              runs.set(event.runId, run);
              break;
            }
            case 'message_start': {
              const run = runs.get(event.runId);
              if (run !== undefined && event.message.role === 'assistant') run.answer = undefined;
              break;
            }
            case 'message_update': {
              const run = runs.get(event.runId);
              const output = run?.output;
              if (run === undefined || output === undefined) break;
              const stream = event.streamEvent;
              let delta: string;
              if (output.mode === 'tool') {
                if (stream.type === 'toolcall_start') {
                  const block = stream.partial.content[stream.contentIndex];
                  const answer = (run.answer ??= newAnswer(run));
                  if (answer.toolIndex === undefined && block?.type === 'toolCall' && block.name === output.toolName)
                    answer.toolIndex = stream.contentIndex;
                  break;
                }
                if (stream.type !== 'toolcall_delta' || run.answer?.toolIndex !== stream.contentIndex) break;
                delta = stream.delta;
              } else {
                if (stream.type !== 'text_delta') break;
                delta = stream.delta;
              }
              const answer = (run.answer ??= newAnswer(run));
              if (answer.read(delta, output.mode === 'prompt')) answer.pending = true;
              answer.waited += delta.length;
              if (answer.pending && answer.waited >= answer.wait) flush(answer);
              break;
            }
            case 'message_end': {
              const answer = runs.get(event.runId)?.answer;
              if (answer !== undefined) flush(answer);
              break;
            }
            case 'agent_end': {
              const run = runs.get(event.runId);
              if (run?.answer !== undefined) flush(run.answer);
              runs.delete(event.runId);
              if (event.output !== undefined) emit(event.output, run?.answer?.id ?? run?.lastAnswer ?? ++answerCount);
              break;
            }
            default:
              break;
          }
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          for (const run of runs.values()) if (run.answer !== undefined) flush(run.answer);
          subscriber.complete();
        },
      });
    });
}

/** How many copied children a character of text may cost (see `flush`). */
const WIDTH_PER_CHARACTER = 32;

/** A run's answer in progress: the mode of its latest attempt, and the answer of its current message. */
interface RunAnswers {
  output: AttemptOutput | undefined;
  answer: Answer | undefined;
  /** The id of the run's latest answer (the validated value at `agent_end` belongs to it). */
  lastAnswer: number | undefined;
}

function newAnswer(run: RunAnswers): Answer {
  const answer = new Answer(++answerCount);
  run.lastAnswer = answer.id;
  return answer;
}

// Before the value: `start` (JSON whitespace, a fence line, then the value or, in prompt mode, prose), `fence` (inside
// a ``` line), `prose` (prompt mode: up to the first `{` or `[`).
type Lead = 'start' | 'fence' | 'prose' | undefined;

/** One answer's text, read into its parser (what comes before the value skipped). */
class Answer {
  readonly parser = new PartialJsonParser();
  toolIndex: number | undefined;
  /** The parser has changes not yet emitted; characters read since the last value; characters to wait for. */
  pending = false;
  waited = 0;
  wait = 0;
  private lead: Lead = 'start';

  constructor(readonly id: number) {}

  /** Reads a delta; whether the value may have changed. */
  read(delta: string, prompt: boolean): boolean {
    if (this.lead === undefined) return this.parser.push(delta);
    for (let i = 0; i < delta.length; i++) {
      const ch = delta[i]!;
      if (this.lead === 'fence') {
        if (ch === '\n') this.lead = 'start';
      } else if (this.lead === 'prose') {
        if (ch === '{' || ch === '[') return this.begin(delta.slice(i));
      } else if (ch === '`') this.lead = 'fence';
      else if (ch !== ' ' && ch !== '\n' && ch !== '\r' && ch !== '\t') {
        if (prompt && ch !== '{' && ch !== '[') this.lead = 'prose';
        else return this.begin(delta.slice(i));
      }
    }
    return false;
  }

  private begin(text: string): boolean {
    this.lead = undefined;
    return this.parser.push(text);
  }
}

/**
 * Structural equality of JSON values, cheap on values that share structure: identical parts are not walked, so
 * comparing two successive values of a parser costs what building the newer one did.
 */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(b, key)) return false;
    if (!jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}
