/**
 * {@link serveMcp} over Streamable HTTP, a session per client, as a Node `http` request handler.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Subscription } from 'rxjs';
import { serveMcp, type ServeMcpOptions, type ServeMcpTarget } from './serve-mcp.js';

/** A Node `http` handler serving MCP over Streamable HTTP (see {@link mcpHttpHandler}). */
export interface McpHttpHandler {
  /** Handles one request (`body`: the parsed JSON body, when a framework already read it). */
  (req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
  /** Ends every session: their calls in flight are cancelled. The handler answers 404 for them afterwards. */
  close(): Promise<void>;
  /** How many sessions are open. */
  readonly sessions: number;
}

/**
 * Serves `target` (an agent, a function making one per call, or tools: see {@link serveMcp}) over Streamable HTTP: an
 * `initialize` request opens a session (a server of its own, its id in the `mcp-session-id` header), later requests go
 * to their session, a `DELETE` (or the client leaving) ends it and cancels its calls in flight. A request naming an
 * unknown session gets a 404, as the protocol says (the client then starts a new session).
 *
 * Mount it at your MCP path; add authentication in front of it (check the request, then call the handler).
 *
 * @example
 * const handler = mcpHttpHandler(() => new Agent({ provider, model, tools }));
 * createServer((req, res) => (req.url === '/mcp' ? void handler(req, res) : res.writeHead(404).end())).listen(3000);
 */
export function mcpHttpHandler(target: ServeMcpTarget, options: ServeMcpOptions = {}): McpHttpHandler {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; subscription: Subscription }>();
  const handle = async (req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> => {
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const session = sessions.get(id);
      if (session !== undefined) return session.transport.handleRequest(req, res, body);
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
      return;
    }
    // No session yet: only an `initialize` request opens one (the transport answers anything else with an error).
    let subscription: Subscription | undefined;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => globalThis.crypto.randomUUID(),
      onsessioninitialized: (sessionId) => void sessions.set(sessionId, { transport, subscription: subscription! }),
      onsessionclosed: (sessionId) => {
        sessions.get(sessionId)?.subscription.unsubscribe();
        sessions.delete(sessionId);
      },
    });
    await new Promise<void>((resolve, reject) => {
      subscription = serveMcp(target, transport, options).subscribe({
        next: (event) => event.type === 'connected' && resolve(),
        error: reject,
        complete: () => {
          if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
        },
      });
    });
    await transport.handleRequest(req, res, body);
    if (transport.sessionId === undefined) subscription!.unsubscribe(); // not an initialize: no session was opened
  };
  return Object.defineProperties(handle, {
    close: {
      value: async () => {
        for (const { subscription } of sessions.values()) subscription.unsubscribe();
        sessions.clear();
      },
    },
    sessions: { get: () => sessions.size },
  }) as McpHttpHandler;
}
