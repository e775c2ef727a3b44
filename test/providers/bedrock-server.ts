// A local Bedrock Runtime: an HTTP/2 server (the AWS SDK's Bedrock client speaks HTTP/2 by default) that answers
// ConverseStream requests with AWS event-stream bodies, encoded here with @smithy/eventstream-codec or served as
// recorded bytes, or with AWS's HTTP errors. It records every request and when each request's stream closed.
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { readFileSync } from 'node:fs';
import { createServer, type Http2Server, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const codec = new EventStreamCodec(
  (bytes) => new TextDecoder().decode(bytes),
  (text) => new TextEncoder().encode(text),
);

/** One frame of an event stream: an event (`:event-type`) or an exception (`:exception-type`). */
export interface Frame {
  readonly type: string;
  readonly body: unknown;
  readonly messageType?: 'event' | 'exception';
}

/**
 * Encodes a frame as AWS does: prelude with its CRC32, the `:event-type` (or `:exception-type`), `:content-type` and
 * `:message-type` string headers in the order real frames have them, the JSON payload, the message CRC32.
 */
export function encodeFrame({ type, body, messageType = 'event' }: Frame): Uint8Array {
  const typeHeader = messageType === 'exception' ? ':exception-type' : ':event-type';
  return codec.encode({
    headers: {
      [typeHeader]: { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: messageType },
    },
    body: new TextEncoder().encode(JSON.stringify(body)),
  });
}

/** A recorded decoded event (`{ "<member>": payload }`, one vercel/ai JSONL line) as its frame. */
export function frameOf(line: unknown): Frame {
  const [type, body] = Object.entries(line as Record<string, unknown>)[0]!;
  return { type, body };
}

export type BedrockReply =
  /** `200 application/vnd.amazon.eventstream` with these bytes, written in 61-byte pieces (frames split anywhere). */
  | { readonly kind: 'stream'; readonly body: Uint8Array }
  /** The stream's bytes, then nothing: the stream stays open until the client resets it. */
  | { readonly kind: 'stall'; readonly body: Uint8Array }
  /** An AWS error answered over HTTP: the status, `x-amzn-errortype`, and the JSON body `{ message }`. */
  | { readonly kind: 'status'; readonly status: number; readonly errorType: string; readonly message: string };

/** The event-stream bytes of these frames. */
export const framesBody = (frames: readonly Frame[]): Uint8Array => concat(frames.map(encodeFrame));

/** A reply streaming these frames. */
export const streamOf = (frames: readonly Frame[]): BedrockReply => ({ kind: 'stream', body: framesBody(frames) });

/** What the server saw of one request. */
export interface BedrockRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- request bodies are asserted field by field
  readonly body: any;
  readonly rawBody: string;
  /** Settles when the response stream closed: `finished: false` when the client reset it before the end. */
  readonly closed: Promise<{ finished: boolean }>;
}

const PIECE = 61;

export class BedrockServer {
  readonly requests: BedrockRequest[] = [];
  private readonly queue: BedrockReply[] = [];

  private constructor(private readonly server: Http2Server) {}

  static async start(): Promise<BedrockServer> {
    const server = createServer();
    const bedrock = new BedrockServer(server);
    server.on('stream', (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const rawBody = Buffer.concat(chunks).toString('utf8');
        const closed = new Promise<{ finished: boolean }>((resolve) =>
          stream.once('close', () => resolve({ finished: stream.writableFinished && stream.rstCode === 0 })),
        );
        bedrock.requests.push({
          path: String(headers[':path']),
          headers,
          body: rawBody === '' ? undefined : (JSON.parse(rawBody) as unknown),
          rawBody,
          closed,
        });
        const reply = bedrock.queue.shift() ?? {
          kind: 'status',
          status: 500,
          errorType: 'InternalServerException',
          message: 'no reply queued on the test server',
        };
        if (reply.kind === 'status') {
          stream.respond({
            ':status': reply.status,
            'content-type': 'application/json',
            'x-amzn-errortype': `${reply.errorType}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
            'x-amzn-requestid': 'req-error-1',
          });
          stream.end(JSON.stringify({ message: reply.message }));
          return;
        }
        stream.respond({
          ':status': 200,
          'content-type': 'application/vnd.amazon.eventstream',
          'x-amzn-requestid': `req-${bedrock.requests.length}`,
        });
        let offset = 0;
        const pump = (): void => {
          if (stream.destroyed || stream.closed) return;
          if (offset >= reply.body.length) {
            if (reply.kind === 'stream') stream.end();
            return;
          }
          stream.write(reply.body.subarray(offset, offset + PIECE));
          offset += PIECE;
          setImmediate(pump);
        };
        pump();
      });
      stream.on('error', () => undefined); // a reset by the client is what the cancellation tests look for
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return bedrock;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  reply(...replies: BedrockReply[]): this {
    this.queue.push(...replies);
    return this;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

const root = fileURLToPath(new URL('../fixtures/providers/bedrock/', import.meta.url));

/**
 * The response bodies of one Bedrock recording, as the wire had them:
 * - `.jsonl` (decoded events): one frame per line, encoded here; a file joining several responses is split where a
 *   `messageStart` begins one;
 * - `.cassette.yaml`: each interaction's `response.body.string`, the recorded binary bytes as they are;
 * - `.json` (a capture document): `response.bodyBase64`, the recorded bytes as they are.
 */
export function bedrockBodies(file: string): Uint8Array[] {
  const text = readFileSync(`${root}${file}`, 'utf8');
  if (file.endsWith('.cassette.yaml')) {
    const cassette = parse(text) as { interactions: { response: { body: { string: Uint8Array } } }[] };
    return cassette.interactions.map(({ response }) => new Uint8Array(response.body.string));
  }
  if (file.endsWith('.json')) {
    const capture = JSON.parse(text) as { response: { bodyBase64: string } };
    return [new Uint8Array(Buffer.from(capture.response.bodyBase64, 'base64'))];
  }
  return recordedEvents(file).map((events) => concat(events.map((line) => encodeFrame(frameOf(line)))));
}

/** The decoded events of a `.jsonl` recording, one list per response: the oracle the tests compare with. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- recorded events are inspected field by field
export function recordedEvents(file: string): any[][] {
  const lines = readFileSync(`${root}${file}`, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const responses: Record<string, unknown>[][] = [];
  for (const line of lines) {
    if ('messageStart' in line || responses.length === 0) responses.push([]);
    responses[responses.length - 1]!.push(line);
  }
  return responses;
}

/** The decoded frames of a binary body (headers and JSON payloads), decoded here independently of the SDK. */
export function decodeFrames(body: Uint8Array): { type: string; body: Record<string, unknown> }[] {
  const frames: { type: string; body: Record<string, unknown> }[] = [];
  for (let offset = 0; offset < body.length;) {
    const length = new DataView(body.buffer, body.byteOffset + offset).getUint32(0);
    const message = codec.decode(body.subarray(offset, offset + length));
    const type = message.headers[':event-type'] ?? message.headers[':exception-type'];
    frames.push({ type: String(type?.value), body: JSON.parse(new TextDecoder().decode(message.body)) as never });
    offset += length;
  }
  return frames;
}
