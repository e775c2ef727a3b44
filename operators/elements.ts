import { Observable, type OperatorFunction } from 'rxjs';
import { completeElementCount } from './partial-json-parser.js';
import { answerOf, type OutputTypeOf } from './partial-output.js';

type Field<T, K extends string> = T extends object ? (K extends keyof T ? NonNullable<T[K]> : unknown) : unknown;
type At<T, P extends string> = P extends ''
  ? T
  : P extends `${infer Head}.${infer Rest}`
    ? At<Field<T, Head>, Rest>
    : Field<T, P>;
type ElementOf<A> = A extends readonly (infer E)[] ? E : unknown;

/** The element type of the array at dotted `P` in the answer type behind `V` (a `PartialOutput`). */
export type ElementAt<V, P extends string> = ElementOf<At<NonNullable<OutputTypeOf<V>>, P>>;

/**
 * Follows an array of a streaming answer element by element, as the AI SDK's `elementStream` does: from the values of
 * `partialOutput`, each element of the array at `path` (dotted field names, `'items'`, `'plan.steps'`; omitted:
 * the answer is the array) is emitted once it is complete — never half an element — in order, each once.
 *
 * An element is complete when the parser has read past it (a `,` or the array's `]`). For values that did not come
 * from `partialOutput`, every element but the last is taken as complete, and the last when the source completes.
 * When the source completes, the rest of the last array is emitted if it is complete (the validated answer is; the
 * value of a run cut off mid-answer is not, and its half element is dropped). A new answer (the next assistant message,
 * a retry after `output_invalid`) starts over: its elements are emitted from the first, so a consumer that renders them
 * clears its list when `output_invalid` arrives. The elements are those of the parsed JSON: a schema's transforms and
 * defaults apply only to the validated answer at the end (elements not emitted before come from it).
 *
 * ```
 * source:  -a-b-c-d-|     (a: { items: [{ n: 'x' }] }, b: { items: [{ n: 'xy' }] }, c: { items: [X, { n: 'z' }] },
 *                           d: { items: [X, Z] }, the validated answer; X = { n: 'xy' }, Z = { n: 'z' })
 * elements('items')
 * result:  -----X---(Z|)
 * ```
 *
 * @example
 * agent.prompt$('List five books', { output: Books }).pipe(partialOutput(Books), elements('books'))
 *   .subscribe((book) => addRow(book)); // book: the schema's element type, complete
 */
export function elements<V, const P extends string = ''>(path?: P): OperatorFunction<V, ElementAt<V, P>> {
  const keys = path === undefined || path === '' ? [] : path.split('.');
  return (source) =>
    new Observable<ElementAt<V, P>>((subscriber) => {
      let answer: number | undefined;
      let sent = 0;
      let last: readonly unknown[] | undefined;
      const send = (array: readonly unknown[], upTo: number) => {
        while (sent < upTo) subscriber.next(array[sent++] as ElementAt<V, P>);
      };
      return source.subscribe({
        next: (value) => {
          const id = answerOf(value);
          if (id !== undefined && id !== answer) {
            answer = id;
            sent = 0;
          }
          let array: unknown = value;
          for (const key of keys) {
            array = typeof array === 'object' && array !== null ? (array as Record<string, unknown>)[key] : undefined;
          }
          if (!Array.isArray(array)) return;
          last = array;
          send(array, completeElementCount(array) ?? array.length - 1);
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          if (last !== undefined) send(last, completeElementCount(last) ?? last.length);
          subscriber.complete();
        },
      });
    });
}
