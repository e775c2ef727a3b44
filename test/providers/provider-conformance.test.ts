// The provider conformance kit (cubepi/testing) run for every built-in wire provider, each through its real SDK
// against the kit's local HTTP server. The scenario streams are built from each API's documented format (the
// recordings in test/fixtures/providers show the same shapes); FauxProvider has no wire and is not run here.
import { createServer } from 'node:http';
import { describe, it } from 'vitest';
import {
  anthropicMessagesWire,
  geminiWire,
  openAIChatWire,
  openAIResponsesWire,
  providerConformance,
} from 'cubepi/testing';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { OpenAIProvider, OpenAIResponsesProvider } from 'cubepi/providers/openai';
import { GoogleProvider } from 'cubepi/providers/google';
import { fakeVertexAuth } from './google-recordings.js';

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
  name: 'GoogleProvider (Gemini API) conformance',
  wire: geminiWire,
  provider: (baseURL) => new GoogleProvider({ baseURL, apiKey: 'test-key' }),
  createServer,
  describe,
  it,
});

providerConformance({
  name: 'GoogleProvider (Vertex AI) conformance',
  wire: geminiWire,
  provider: (baseURL) =>
    new GoogleProvider({
      baseURL,
      vertexai: true,
      project: 'conformance',
      location: 'us-central1',
      googleAuthOptions: fakeVertexAuth,
    }),
  createServer,
  describe,
  it,
});
