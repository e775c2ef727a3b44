import { concatMap, from, reduce, takeLast, type ObservableInput, type OperatorFunction } from 'rxjs';

/** A partial tool result: the fields a hook sets replace the result's; `undefined` fields leave them alone. */
export interface ToolResultPatch {
  readonly content?: unknown;
  readonly details?: unknown;
  readonly isError?: boolean;
  readonly terminate?: boolean;
}

/**
 * The **field-wise merge** rule (`afterToolCall`): every hook runs, one at a time, in list order, each seeing the
 * executed result (not its predecessors' patches); their patches merge field by field, a later non-`undefined` field
 * overriding an earlier one. A hook that answers nothing adds nothing. No hooks give `{}`.
 *
 * ```
 * hooks:   (ab|)
 * a(r):    -D|              D: { details: rich }
 * b(r):      -C|            C: { content: redacted }
 * result:  ----(M|)         M: { details: rich, content: redacted }
 * ```
 *
 * @example
 * from([detailsAdder, redactor]).pipe(mergeToolResults((hook) => hook.afterToolCall(ctx)));
 */
export function mergeToolResults<THook, TPatch extends ToolResultPatch>(
  invoke: (hook: THook, index: number) => ObservableInput<TPatch | undefined>,
): OperatorFunction<THook, TPatch> {
  return (hooks) =>
    hooks.pipe(
      concatMap((hook, index) => from(invoke(hook, index)).pipe(takeLast(1))),
      reduce((merged: TPatch, patch: TPatch | undefined) => mergeToolResultPatch(merged, patch), {} as TPatch),
    );
}

/** Merges `patch` over `base` field by field: a field `patch` leaves `undefined` keeps `base`'s value. */
export function mergeToolResultPatch<TPatch extends ToolResultPatch>(
  base: TPatch,
  patch: TPatch | undefined | null,
): TPatch {
  if (patch === undefined || patch === null) return base;
  const merged = { ...base } as Record<string, unknown>;
  for (const key of ['content', 'details', 'isError', 'terminate'] as const) {
    if (patch[key] !== undefined) merged[key] = patch[key];
  }
  return merged as TPatch;
}
