/**
 * The server side of MCP over stdio, read in linear time, answering what it cannot read.
 * @module
 */
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { JsonRpcLineReader, type JsonRpcLine } from './json-rpc-lines.js';

/** Options of {@link stdioServerTransport}. */
export interface StdioServerTransportOptions {
  /** Default `process.stdin`. */
  readonly stdin?: Readable | undefined;
  /** Default `process.stdout`. */
  readonly stdout?: Writable | undefined;
  /** The longest message read, in bytes (default 10 MiB, the SDK's): a longer one is answered with an error and dropped. */
  readonly maxMessageBytes?: number | undefined;
}

// The SDK's own bound for stdio (STDIO_DEFAULT_MAX_BUFFER_SIZE): a server reads prompts and arguments, not results.
const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/**
 * An MCP server transport over stdin and stdout, for {@link serveMcp}, in place of the SDK's `StdioServerTransport`:
 * it reads in linear time (the SDK's buffer costs quadratic time in a message's size), and it answers what it cannot
 * read as JSON-RPC 2.0 says and keeps serving, where the SDK's transport stays silent (and closes on a long line):
 *
 * - a line that is not JSON: `-32700` (Parse error), `id: null`;
 * - JSON that is not a JSON-RPC message: `-32600` (Invalid Request), with the message's `id` when it has one;
 * - a line over `maxMessageBytes`: `-32600`, `id: null`, saying the limit (the line is dropped as it arrives, so
 *   memory stays bounded);
 * - a response to one of the server's own requests (an elicitation) that is invalid: that request fails at once.
 *
 * The end of stdin closes the transport (and `serveMcp` completes).
 *
 * @example
 * serveMcp(agent, stdioServerTransport()).subscribe();
 */
export function stdioServerTransport(options: StdioServerTransportOptions = {}): Transport {
  return new StdioServerLineTransport(
    options.stdin ?? process.stdin,
    options.stdout ?? process.stdout,
    options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
  );
}

class StdioServerLineTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;

  private readonly reader: JsonRpcLineReader;
  private started = false;
  private closed = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    maxMessageBytes: number,
  ) {
    this.reader = new JsonRpcLineReader(maxMessageBytes, (line) => this.received(line));
  }

  private readonly onData = (chunk: Buffer | string) =>
    this.reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  private readonly onError = (error: Error) => this.onerror?.(error);
  private readonly onEnd = () => void this.close();

  start(): Promise<void> {
    if (this.started) return Promise.reject(new Error('the transport is already started'));
    this.started = true;
    this.stdin.on('data', this.onData);
    this.stdin.on('error', this.onError);
    this.stdin.on('end', this.onEnd);
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.write(message);
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.stdin.off('data', this.onData);
    this.stdin.off('error', this.onError);
    this.stdin.off('end', this.onEnd);
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.reader.stop();
    this.onclose?.();
    return Promise.resolve();
  }

  private write(message: unknown): Promise<void> {
    if (this.closed) return Promise.reject(new Error('Not connected'));
    return new Promise((resolve) => {
      if (this.stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.stdout.once('drain', resolve);
    });
  }

  private answer(id: string | number | null, code: ErrorCode, message: string): void {
    this.write({ jsonrpc: '2.0', id, error: { code, message } }).catch((error: unknown) =>
      this.onerror?.(error instanceof Error ? error : new Error(String(error))),
    );
  }

  private received(line: JsonRpcLine): void {
    switch (line.kind) {
      case 'message':
        return this.onmessage?.(line.message);
      case 'parse_error':
        return this.answer(null, ErrorCode.ParseError, `Parse error: ${line.detail}`);
      case 'invalid_request':
        return this.answer(line.id, ErrorCode.InvalidRequest, `Invalid Request: ${line.detail}`);
      case 'too_large':
        return this.answer(
          null,
          ErrorCode.InvalidRequest,
          `Invalid Request: a message over ${line.maxBytes} bytes was dropped`,
        );
      case 'invalid_response':
        return this.onmessage?.({
          jsonrpc: '2.0',
          id: line.id,
          error: { code: ErrorCode.InternalError, message: `the client sent an invalid response: ${line.detail}` },
        });
    }
  }
}
