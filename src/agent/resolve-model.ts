/**
 * From the Agent's `model` option to a {@link Model}.
 * @module
 */
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import { lookupModel } from '../types/model-lookup.js';

/**
 * A model id becomes a model of `provider`, with the facts of the model table when it knows the id (prices, limits,
 * capabilities: see `findModel`); a `Model` is taken as it is. (A browser bundle that imports no built-in provider,
 * `findModel` nor `MODELS` leaves the table out: ids then resolve to bare models.)
 */
export function resolveModel(model: Model | string, provider: Provider): Model {
  if (typeof model !== 'string') return model;
  const known = lookupModel(model);
  return known === undefined ? { id: model, provider: provider.id } : { ...known, provider: provider.id };
}
