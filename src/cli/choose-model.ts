/**
 * Which provider and model the `cubepi` command talks to: from `--provider`/`--model`, the configuration, or the
 * environment (`ANTHROPIC_API_KEY` → Anthropic, `OPENAI_API_KEY` or `OPENAI_BASE_URL` → OpenAI); with none, the
 * offline demo model. With `OPENAI_BASE_URL` and no model, the model is the one that server lists. Vendor SDKs are
 * loaded only for the provider chosen.
 * @module
 */
import { MODELS, type Provider } from '../index.js';
import { CliError, usageError } from './cli-error.js';
import { demoProvider } from './demo-provider.js';
import { servedModel } from './served-model.js';

/** The providers the command knows. `faux` is the offline demo model. */
export const PROVIDER_NAMES = ['anthropic', 'openai', 'openai-responses', 'faux'] as const;

/** One of {@link PROVIDER_NAMES}. */
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** The chosen provider and model. */
export interface ModelChoice {
  readonly provider: Provider;
  readonly providerName: ProviderName;
  /** The model id sent to the API. */
  readonly model: string;
  /** Whether this is the offline demo model (scripted: it does not understand the prompt). */
  readonly demo: boolean;
  /** The server the provider talks to, for error messages (`api.anthropic.com`, `$OPENAI_BASE_URL`). */
  readonly endpoint: string;
  /** A line to show before the first run (why the demo model runs), if any. */
  readonly notice?: string | undefined;
}

/** What to choose from; each field may be undefined. */
export interface ModelRequest {
  readonly provider?: string | undefined;
  readonly model?: string | undefined;
  /** The demo model's pause between streamed chunks, in milliseconds. */
  readonly delayMs?: number | undefined;
}

const KEY_VARIABLE = { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_API_KEY' } as const;

/**
 * The default model of a vendor: the newest Sonnet for Anthropic, the newest GPT for OpenAI, read from the model table
 * (`MODELS`, newest first), so a new table row moves the default without touching the command.
 */
export function defaultModel(vendor: 'anthropic' | 'openai'): string {
  const family = vendor === 'anthropic' ? /^claude-sonnet-/ : /^gpt-\d+(\.\d+)?$/;
  const model = MODELS.find((m) => m.provider === vendor && family.test(m.id));
  return (model ?? MODELS.find((m) => m.provider === vendor)!).id;
}

/** The provider the environment points at, or `faux` when it names none. */
export function providerFromEnv(env: NodeJS.ProcessEnv): ProviderName {
  if (nonEmpty(env.ANTHROPIC_API_KEY)) return 'anthropic';
  if (nonEmpty(env.OPENAI_API_KEY) || nonEmpty(env.OPENAI_BASE_URL)) return 'openai';
  return 'faux';
}

/**
 * Builds the provider: `request.provider` (else the environment's, see {@link providerFromEnv}) and `request.model`
 * (else {@link defaultModel}; with `OPENAI_BASE_URL`, the server's model: see `servedModel`). Throws a usage
 * `CliError` (exit 2) for an unknown provider or a server whose model must be named, and a `CliError` (exit 1) naming
 * the variable to set when the provider's key is missing, or when the server cannot be reached.
 */
export async function chooseModel(request: ModelRequest, env: NodeJS.ProcessEnv): Promise<ModelChoice> {
  const explicit = request.provider;
  if (explicit !== undefined && !(PROVIDER_NAMES as readonly string[]).includes(explicit)) {
    throw usageError(`unknown provider "${explicit}": use one of ${PROVIDER_NAMES.join(', ')}`);
  }
  const name = (explicit ?? providerFromEnv(env)) as ProviderName;
  switch (name) {
    case 'faux':
      return {
        provider: demoProvider({ delayMs: request.delayMs }),
        providerName: 'faux',
        model: request.model ?? 'cubepi-demo',
        demo: true,
        endpoint: 'this process',
        notice:
          explicit === 'faux'
            ? 'Offline demo model (--provider faux): scripted, it runs the built-in tools whatever you ask.'
            : 'No ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL set: running the offline demo model ' +
              '(scripted, it runs the built-in tools whatever you ask). Set a key for a real model.',
      };
    case 'anthropic': {
      if (!nonEmpty(env.ANTHROPIC_API_KEY) && !nonEmpty(env.ANTHROPIC_AUTH_TOKEN)) throw missingKey('anthropic');
      const { AnthropicProvider } = await import('../providers/anthropic.js');
      const baseURL = env.ANTHROPIC_BASE_URL;
      return {
        provider: new AnthropicProvider(),
        providerName: name,
        model: request.model ?? defaultModel('anthropic'),
        demo: false,
        endpoint: nonEmpty(baseURL) ? `ANTHROPIC_BASE_URL (${baseURL})` : 'api.anthropic.com',
      };
    }
    case 'openai':
    case 'openai-responses': {
      const baseURL = env.OPENAI_BASE_URL;
      // A local OpenAI-compatible server (Ollama, vLLM, llama.cpp) needs no key; the SDK needs a string.
      if (!nonEmpty(env.OPENAI_API_KEY) && !nonEmpty(baseURL)) throw missingKey('openai');
      const { OpenAIProvider, OpenAIResponsesProvider } = await import('../providers/openai.js');
      const options = nonEmpty(env.OPENAI_API_KEY) ? {} : { apiKey: 'local' };
      // A server of its own has its own models: ask it which, rather than send it the table's OpenAI default.
      const served =
        request.model === undefined && nonEmpty(baseURL)
          ? await servedModel(baseURL, env.OPENAI_API_KEY || undefined, defaultModel('openai'))
          : { model: request.model ?? defaultModel('openai') };
      return {
        provider: name === 'openai' ? new OpenAIProvider(options) : new OpenAIResponsesProvider(options),
        providerName: name,
        model: served.model,
        demo: false,
        endpoint: nonEmpty(baseURL) ? `OPENAI_BASE_URL (${baseURL})` : 'api.openai.com',
        notice: served.notice,
      };
    }
  }
}

function missingKey(vendor: 'anthropic' | 'openai'): CliError {
  const variable = KEY_VARIABLE[vendor];
  const local = vendor === 'openai' ? ' (or OPENAI_BASE_URL for a local server)' : '';
  return new CliError(
    `--provider ${vendor} needs an API key: export ${variable}=…${local}, or leave --provider out to run the demo`,
  );
}

function nonEmpty(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}
