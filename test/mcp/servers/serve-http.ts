// Serves an MCP server over Streamable HTTP (stateful sessions, so a cancellation reaches the request it cancels) on a
// random local port, for the tests.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

interface Connectable {
  connect(transport: StreamableHTTPServerTransport): Promise<void>;
  close(): Promise<void>;
}

export interface ServedHttp {
  readonly url: string;
  /** The headers of every request received. */
  readonly headers: IncomingMessage['headers'][];
  close(): Promise<void>;
}

/** Serves a fresh server (from `create`) per session. */
export async function serveHttp(create: () => Connectable): Promise<ServedHttp> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Connectable }>();
  const headers: IncomingMessage['headers'][] = [];
  const http: HttpServer = createServer((req, res) => {
    headers.push(req.headers);
    void (async () => {
      const id = req.headers['mcp-session-id'];
      const existing = typeof id === 'string' ? sessions.get(id) : undefined;
      if (existing !== undefined) return existing.transport.handleRequest(req, res);
      const server = create();
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, { transport, server }),
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    })().catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    headers,
    close: async () => {
      for (const { server } of sessions.values()) await server.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
