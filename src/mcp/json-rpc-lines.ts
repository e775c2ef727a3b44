/**
 * Newline-delimited JSON-RPC read in linear time and bounded memory: the framing of MCP's stdio transport.
 * @module
 */
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** What one line was: a message, or what is wrong with it (with the id to answer, when it has one). */
export type JsonRpcLine =
  | { readonly kind: 'message'; readonly message: JSONRPCMessage }
  | { readonly kind: 'parse_error'; readonly detail: string }
  /** Valid JSON that is not a JSON-RPC message, and not shaped like a response: to be answered -32600. */
  | { readonly kind: 'invalid_request'; readonly id: string | number | null; readonly detail: string }
  /** Shaped like a response (an id, no method) but not a valid one: the request it answers should fail at once. */
  | { readonly kind: 'invalid_response'; readonly id: string | number; readonly detail: string }
  /** A line longer than the bound, reported when it passes the bound; the rest of it is dropped as it arrives. */
  | { readonly kind: 'too_large'; readonly maxBytes: number };

/**
 * Splits a byte stream into lines and reads each as JSON-RPC. Each byte is looked at once and copied at most once: a
 * chunk is searched for `\n` from where the last search stopped, the pieces of a line are kept as they came and
 * joined once when it ends. (The SDK's `ReadBuffer` joins the whole buffer with each chunk and searches it from the
 * start: quadratic in the size of a message, a 20 MB result cost 13.6 s of event loop.)
 *
 * A line longer than `maxBytes` is reported as `too_large` as soon as it passes the bound, and the rest of it is
 * dropped until its end: memory stays under `maxBytes` whatever the peer sends, and the next line is read normally.
 */
export class JsonRpcLineReader {
  private parts: Buffer[] = [];
  private size = 0;
  private dropping = false;
  private stopped = false;

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: JsonRpcLine) => void,
  ) {}

  /** Reads a chunk: every line it completes is reported, in order. */
  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length && !this.stopped) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!this.dropping) {
        if (this.size + (end - start) > this.maxBytes) {
          this.parts = [];
          this.size = 0;
          this.dropping = true;
          this.onLine({ kind: 'too_large', maxBytes: this.maxBytes });
        } else if (end > start) {
          this.parts.push(chunk.subarray(start, end));
          this.size += end - start;
        }
      }
      if (newline === -1) return;
      const parts = this.parts;
      const size = this.size;
      const dropped = this.dropping;
      this.parts = [];
      this.size = 0;
      this.dropping = false;
      start = newline + 1;
      if (!dropped && size > 0) this.read(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
    }
  }

  /** Stops reading: what is buffered is dropped and later chunks are ignored. */
  stop(): void {
    this.stopped = true;
    this.parts = [];
    this.size = 0;
  }

  private read(bytes: Buffer): void {
    let text = bytes.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return this.onLine({ kind: 'parse_error', detail: (error as Error).message });
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (parsed.success) return this.onLine({ kind: 'message', message: parsed.data });
    this.onLine(classify(value));
  }
}

/** Why a JSON value is not a JSON-RPC message, and which kind of answer it needs. */
function classify(value: unknown): JsonRpcLine {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'invalid_request', id: null, detail: `the message is ${kindOf(value)}, not a JSON-RPC object` };
  }
  const record = value as Record<string, unknown>;
  const id = typeof record.id === 'string' || typeof record.id === 'number' ? record.id : null;
  const detail =
    record.jsonrpc !== '2.0'
      ? 'its "jsonrpc" is not "2.0"'
      : 'method' in record
        ? typeof record.method === 'string'
          ? 'its params are not an object'
          : 'its method is not a string'
        : 'result' in record
          ? kindOf(record.result) === 'an object'
            ? 'it is not a valid JSON-RPC response'
            : `its result is ${kindOf(record.result)}, not an object`
          : 'error' in record
            ? 'its error is not { code: integer, message: string }'
            : 'it has neither a method, a result nor an error';
  if (id !== null && !('method' in record)) return { kind: 'invalid_response', id, detail };
  return { kind: 'invalid_request', id, detail };
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
