/**
 * Where the core finds the model table: set by the table's own module when it loads, so that the Agent (which
 * resolves a model id through it) does not pull the table into a bundle that imports no provider. In src/types
 * because every layer reads it (the Agent, the middleware's capability check) and the table's module sets it.
 * @module
 */
import type { Model } from './model.js';

let table: ((id: string) => Model | undefined) | undefined;
// The table's answers by id (`null`: not in the table). The table never changes once loaded, and every turn asks it for
// the facts of its model (`modelIncapability`): a model it does not know cost two map lookups and a regular expression
// per turn. Bounded: cleared when full (ids are a handful of models in practice).
const answers = new Map<string, Model | null>();
const MAX_ANSWERS = 256;

/** Called once by `model-table.ts` as it loads: from then on {@link lookupModel} answers from it. */
export function useModelTable(find: (id: string) => Model | undefined): void {
  table = find;
  answers.clear();
}

/**
 * The table's entry for `id` (`findModel`), once the table is loaded: always in Node (the `cubepi` entry loads it),
 * and in a browser bundle whenever it imports a built-in provider, `findModel` or `MODELS`; `undefined` otherwise.
 */
export function lookupModel(id: string): Model | undefined {
  if (table === undefined) return undefined;
  const known = answers.get(id);
  if (known !== undefined) return known ?? undefined;
  const found = table(id);
  if (answers.size >= MAX_ANSWERS) answers.clear();
  answers.set(id, found ?? null);
  return found;
}
