/**
 * `studioNodeListener`: a studio on Node's `http`.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toNodeListener } from '../server/node.js';
import type { HttpAgentServer } from '../server/routes.js';
import type { Studio } from './create-studio.js';

/**
 * A `node:http` request listener for `studio`: the agent server's routes go to its own `toNodeListener` (run streams
 * written straight to the socket), everything else to `studio.fetch`. Add `attachWebSocket(http, server)` for
 * WebSocket streams.
 *
 * @example
 * http.createServer(studioNodeListener(createStudio({ checkpointer, server }))).listen(8790, '127.0.0.1');
 */
export function studioNodeListener(studio: Studio): (req: IncomingMessage, res: ServerResponse) => void {
  // Only `fetch` is read by the adapter for a handler that is not a server's own.
  const page = toNodeListener({ fetch: (request: Request) => studio.fetch(request) } as unknown as HttpAgentServer);
  const server = studio.server;
  const api = server === undefined ? undefined : toNodeListener(server);
  const prefix = server === undefined ? '' : `${server.settings.basePath}/`;
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (api !== undefined && (path.startsWith(prefix) || `${path}/` === prefix)) api(req, res);
    else page(req, res);
  };
}
