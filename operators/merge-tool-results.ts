import type { ObservableInput, OperatorFunction } from 'rxjs';
import { foldHooks, type HookRule } from './fold-hooks.js';

/** A partial tool result: the fields a hook sets replace the result's; `undefined` fields leave them alone. */
export interface ToolResultPatch {
  readonly content?: unknown;
  readonly details?: unknown;
  readonly isError?: boolean | undefined;
  readonly terminate?: boolean | undefined;
}

const FIELD_WISE_MERGE: HookRule<ToolResultPatch, ToolResultPatch | undefined | null> = {
  step: (merged, patch) => mergeToolResultPatch(merged, patch),
};

/**
 * The **field-wise merge** rule as a reducer: the accumulator is the merged patch (seed: `{}`); each answer is merged
 * over it field by field ({@link mergeToolResultPatch}); an answer of nothing adds nothing. No early stop: every hook
 * runs.
 *
 * ```
 * hooks:   (ab|)
 * a(r):    -D|              D: { details: rich }
 * b(r):      -C|            C: { content: redacted }
 * foldHooks(fieldWiseMergeRule(), {}, …)
 * result:  --(M|)           M: { details: rich, content: redacted }
 * ```
 *
 * @example
 * from(rewriters).pipe(foldHooks(fieldWiseMergeRule(), {}, (rewriter) => rewriter.afterToolCall(ctx)));
 */
export function fieldWiseMergeRule<TPatch extends ToolResultPatch>(): HookRule<TPatch, TPatch | undefined | null> {
  return FIELD_WISE_MERGE as unknown as HookRule<TPatch, TPatch | undefined | null>;
}

/**
 * The **field-wise merge** rule (`afterToolCall`): every hook runs, one at a time, in list order, each seeing the
 * executed result (not its predecessors' patches); their patches merge field by field, a later non-`undefined` field
 * overriding an earlier one. A hook that answers nothing adds nothing. No hooks give `{}`. It is {@link foldHooks} of
 * {@link fieldWiseMergeRule}.
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
  invoke: (hook: THook, index: number) => ObservableInput<TPatch | undefined | null>,
): OperatorFunction<THook, TPatch> {
  return foldHooks(fieldWiseMergeRule<TPatch>(), {} as TPatch, (hook: THook, _merged, index) => invoke(hook, index));
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
