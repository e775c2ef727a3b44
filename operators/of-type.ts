import { filter, type OperatorFunction } from 'rxjs';

/**
 * Keeps the events whose `type` is one of `types`, narrowing the element type. Works on agent events and on stream
 * events alike.
 *
 * ```
 * source:  -s-u-u-e-|        (s: message_start, u: message_update, e: message_end)
 * ofType('message_update')
 * result:  ---u-u---|
 * ```
 *
 * @example
 * agent.events$.pipe(ofType('tool_execution_start')).subscribe((e) => spinner.show(e.toolName));
 */
export function ofType<TEvent extends { readonly type: string }, const TType extends TEvent['type']>(
  ...types: readonly TType[]
): OperatorFunction<TEvent, Extract<TEvent, { type: TType }>> {
  if (types.length === 1) {
    const only = types[0];
    return filter((event): event is Extract<TEvent, { type: TType }> => event.type === only);
  }
  const wanted = new Set<string>(types);
  return filter((event): event is Extract<TEvent, { type: TType }> => wanted.has(event.type));
}
