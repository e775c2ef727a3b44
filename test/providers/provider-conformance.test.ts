// The provider conformance kit (cubepi/testing) run for every built-in wire provider, each through its real SDK
// against the kit's local HTTP server. The scenario streams are built from each API's documented format (the
// recordings in test/fixtures/providers show the same shapes). OpenAIProvider also runs with a compat profile (ollama:
// max_tokens, its reasoning fields). FauxProvider has no wire, so the kit does not apply to it.
import { createServer } from 'node:http';
import { describe, it } from 'vitest';
import { anthropicMessagesWire, openAIChatWire, openAIResponsesWire, providerConformance } from 'cubepi/testing';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { OpenAIProvider, OpenAIResponsesProvider } from 'cubepi/providers/openai';

providerConformance({
  name: 'AnthropicProvider conformance',
  wire: anthropicMessagesWire,
  provider: (baseURL) => new AnthropicProvider({ baseURL, apiKey: 'test-key' }),
  createServer,
  describe,
  it,
});

providerConformance({
  name: 'OpenAIProvider (Chat Completions) conformance',
  wire: openAIChatWire,
  provider: (baseURL) => new OpenAIProvider({ baseURL, apiKey: 'test-key' }),
  createServer,
  describe,
  it,
});

providerConformance({
  name: 'OpenAIResponsesProvider conformance',
  wire: openAIResponsesWire,
  provider: (baseURL) => new OpenAIResponsesProvider({ baseURL, apiKey: 'test-key' }),
  createServer,
  describe,
  it,
});

providerConformance({
  name: 'OpenAIProvider (compat profile ollama) conformance',
  wire: openAIChatWire,
  provider: (baseURL) => new OpenAIProvider({ baseURL, apiKey: 'ollama', compat: 'ollama' }),
  createServer,
  describe,
  it,
});
