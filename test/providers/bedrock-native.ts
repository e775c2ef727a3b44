// Shared by the Bedrock output, reasoning and files tests: the local HTTP/2 Converse server, a provider on it, and a
// short answer whose text is given.
import { afterAll, beforeAll } from 'vitest';
import { BedrockProvider } from 'cubepi/providers/bedrock';
import { BedrockServer, streamOf, type BedrockReply, type Frame } from './bedrock-server.js';

export function useBedrockServer(): {
  server: () => BedrockServer;
  provider: (options?: ConstructorParameters<typeof BedrockProvider>[0]) => BedrockProvider;
} {
  let server: BedrockServer;
  beforeAll(async () => {
    server = await BedrockServer.start();
  });
  afterAll(() => server.close());
  return {
    server: () => server,
    provider: (options = {}) =>
      new BedrockProvider({
        region: 'us-east-1',
        endpoint: server.url,
        credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'test-secret' },
        ...options,
      }),
  };
}

/** A Converse answer streaming `parts` as one text block, then `end_turn` and usage. */
export function answer(...parts: string[]): BedrockReply {
  const frames: Frame[] = [
    { type: 'messageStart', body: { role: 'assistant' } },
    ...parts.map((text) => ({ type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { text } } })),
    { type: 'contentBlockStop', body: { contentBlockIndex: 0 } },
    { type: 'messageStop', body: { stopReason: 'end_turn' } },
    {
      type: 'metadata',
      body: { usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7 }, metrics: { latencyMs: 100 } },
    },
  ];
  return streamOf(frames);
}
