/**
 * The model a local OpenAI-compatible server (`OPENAI_BASE_URL`: Ollama, vLLM, llama.cpp) runs when `--model` is not
 * given: asked of the server (`GET /models`), never guessed from the model table, whose default (an OpenAI model) a
 * local server does not have.
 * @module
 */
import { CliError, usageError } from './cli-error.js';
import { causeOf } from './open-checkpointer.js';

/** How long the server gets to list its models. */
const LIST_TIMEOUT_MS = 10_000;

/** The model to run, and a line saying so when the server's list chose it. */
export interface ServedModel {
  readonly model: string;
  readonly notice?: string | undefined;
}

/**
 * Lists the models at `baseURL` and picks one: `preferred` (the table's default) when the server has it, else the
 * server's only model. A server with several models, none, or no list gets a usage `CliError` (exit 2) saying to pass
 * `--model`; an unreachable one a `CliError` (exit 1) saying to check `OPENAI_BASE_URL`.
 */
export async function servedModel(
  baseURL: string,
  apiKey: string | undefined,
  preferred: string,
): Promise<ServedModel> {
  const where = `OPENAI_BASE_URL (${baseURL})`;
  let response: Response;
  try {
    response = await fetch(`${baseURL.replace(/\/+$/, '')}/models`, {
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
    });
  } catch (error) {
    throw new CliError(`cannot reach ${where} (${causeOf(error)}): check your network and OPENAI_BASE_URL`, 1, {
      cause: error,
    });
  }
  const ids = response.ok ? modelIds(await response.json().catch(() => undefined)) : undefined;
  if (ids === undefined) {
    const status = response.ok ? 'not a model list' : String(response.status);
    throw usageError(`${where} does not list its models (GET /models: ${status}): pass --model with a model it serves`);
  }
  if (ids.includes(preferred)) return { model: preferred };
  if (ids.length === 1) {
    return { model: ids[0]!, notice: `model ${ids[0]!}: the one OPENAI_BASE_URL serves (--model picks another)` };
  }
  if (ids.length === 0) throw usageError(`${where} lists no model: load one in the server, or pass --model <id>`);
  const shown = ids.length <= 5 ? ids.join(', ') : `${ids.slice(0, 5).join(', ')}, …`;
  throw usageError(`${where} serves ${ids.length} models (${shown}): pass --model <id>`);
}

/** The ids of an OpenAI model list (`{ data: [{ id }] }`), or undefined when `body` is not one. */
function modelIds(body: unknown): string[] | undefined {
  const data = (body as { data?: unknown } | undefined)?.data;
  if (!Array.isArray(data)) return undefined;
  return data.flatMap((entry) => {
    const id = (entry as { id?: unknown } | null)?.id;
    return typeof id === 'string' && id !== '' ? [id] : [];
  });
}
