// serveMcp over Streamable HTTP for the tests: a serveMcp subscription per session, on a random local port.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Subscription } from 'rxjs';
import { serveMcp, type ServeMcpOptions, type ServeMcpTarget } from 'cubepi/mcp';
import { serveHttp, type ServedHttp } from './servers/serve-http.js';

/** Serves `target` (each session its own `serveMcp`, connected before the session's first request is handled). */
export function serveMcpHttp(target: ServeMcpTarget, options?: ServeMcpOptions): Promise<ServedHttp> {
  const subscriptions: Subscription[] = [];
  return serveHttp(() => ({
    connect: (transport: Transport) =>
      new Promise<void>((resolve, reject) => {
        subscriptions.push(
          serveMcp(target, transport, options).subscribe({
            next: (event) => event.type === 'connected' && resolve(),
            error: reject,
          }),
        );
      }),
    close: () => Promise.resolve(subscriptions.forEach((subscription) => subscription.unsubscribe())),
  }));
}
