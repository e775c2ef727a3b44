// The provider conformance kit (cubepi/testing) run for BedrockProvider, through the real AWS SDK client (its default
// HTTP/2 handler) against the kit's server on node:http2. The wire below says each scenario as Bedrock's
// ConverseStream does: AWS event-stream frames (encoded with @smithy/eventstream-codec, as in the recordings in
// test/fixtures/providers/bedrock), and AWS's HTTP errors (`x-amzn-errortype`, a JSON `{ message }`). Over HTTP/2 "the
// connection closes" is the request's stream being reset: the session itself may stay open for the next request.
import { createServer as createHttp2Server, type Http2Session } from 'node:http2';
import { describe, it } from 'vitest';
import { providerConformance, type ConformanceWire, type CreateServerLike, type WireUsage } from 'cubepi/testing';
import { BedrockProvider } from 'cubepi/providers/bedrock';
import { encodeFrame, type Frame } from './bedrock-server.js';

const EVENT_STREAM = { 'content-type': 'application/vnd.amazon.eventstream' };

const start: Frame = { type: 'messageStart', body: { role: 'assistant' } };
const delta = (index: number, value: Record<string, unknown>, extra: Record<string, unknown> = {}): Frame => ({
  type: 'contentBlockDelta',
  body: { contentBlockIndex: index, delta: value, ...extra },
});
const stop = (index: number): Frame => ({ type: 'contentBlockStop', body: { contentBlockIndex: index } });
const end = (stopReason: string, usage: WireUsage): Frame[] => [
  { type: 'messageStop', body: { stopReason } },
  {
    type: 'metadata',
    body: {
      usage: { inputTokens: usage.input, outputTokens: usage.output, totalTokens: usage.input + usage.output },
      metrics: { latencyMs: 10 },
    },
  },
];
const chunks = (frames: readonly Frame[]) => frames.map(encodeFrame);

// Bedrock's exception names for the statuses the kit asks for.
const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'ValidationException',
  401: 'UnrecognizedClientException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
};

const bedrockConverseWire: ConformanceWire = {
  name: 'Bedrock ConverseStream',
  text: (parts, usage) => ({
    headers: EVENT_STREAM,
    chunks: chunks([start, ...parts.map((text) => delta(0, { text })), stop(0), ...end('end_turn', usage)]),
  }),
  toolCall: (call, usage) => ({
    headers: EVENT_STREAM,
    chunks: chunks([
      start,
      {
        type: 'contentBlockStart',
        body: { contentBlockIndex: 0, start: { toolUse: { toolUseId: call.id, name: call.name } } },
      },
      ...call.argumentParts.map((input) => delta(0, { toolUse: { input } })),
      stop(0),
      ...end('tool_use', usage),
    ]),
  }),
  unknownEvents: (parts, usage) => ({
    headers: EVENT_STREAM,
    chunks: chunks([
      { type: 'messageStart', body: { role: 'assistant', p: 'abcdefgh', futureField: { x: 1 } } },
      { type: 'futureEvent', body: { x: 1 } },
      ...parts.flatMap((text) => [delta(0, { text }, { p: 'abc' }), delta(0, { futureDelta: { x: 1 } })]),
      stop(0),
      ...end('end_turn', usage),
    ]),
  }),
  error: (status, message) => ({
    status,
    headers: {
      'content-type': 'application/json',
      'x-amzn-errortype': `${ERROR_TYPES[status] ?? 'InternalServerException'}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    },
    chunks: [JSON.stringify({ message })],
  }),
};

/** node:http2's server in the shape the kit drives (node:http's), with a close that ends the client's sessions. */
const createServer: CreateServerLike = (listener) => {
  const sessions = new Set<Http2Session>();
  const server = createHttp2Server((req, res) => {
    res.stream.on('error', () => undefined); // a reset by the client is what the cancellation test looks for
    listener(req, {
      // A stream the client reset (RST_STREAM CANCEL) did not finish, whatever its writable side says.
      get writableFinished() {
        return res.stream.writableFinished && res.stream.rstCode === 0;
      },
      get destroyed() {
        return res.stream.destroyed || res.stream.closed;
      },
      writeHead: (status, headers) => res.writeHead(status, headers),
      write: (chunk) => res.write(chunk),
      end: () => res.end(),
      once: (event, callback) => res.once(event, callback),
    });
  });
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  return {
    listen: (port, host, callback) => server.listen(port, host, callback),
    address: () => server.address(),
    close: (callback) => server.close(() => callback()),
    closeAllConnections: () => {
      for (const session of sessions) session.destroy();
    },
  };
};

providerConformance({
  name: 'BedrockProvider conformance',
  wire: bedrockConverseWire,
  provider: (endpoint) =>
    new BedrockProvider({
      region: 'us-east-1',
      endpoint,
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'test-secret' },
    }),
  model: { id: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', provider: 'bedrock', reasoning: false },
  createServer,
  describe,
  it,
});
