// A TCP proxy in front of the test PostgreSQL server, to cut connections off: while `refusing`, every new connection
// is accepted and closed at once (the server stays up for the test's other connections).
import net from 'node:net';
import { pgConfig } from '../checkpoint/postgres-server.js';

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** While true, new connections are closed as they arrive; open ones are left alone. */
  refusing: boolean;
  /** How many connections it closed while refusing. */
  readonly refused: number;
  /** Stops the proxy and closes every connection through it. */
  close(): Promise<void>;
}

/** A proxy to the server of `pgConfig` (a TCP host, or a socket directory). */
export async function startPgProxy(): Promise<TcpProxy> {
  const host = String(pgConfig.host);
  const port = Number(pgConfig.port);
  const sockets = new Set<net.Socket>();
  let refused = 0;
  const server = net.createServer((socket) => {
    if (proxy.refusing) {
      refused++;
      socket.destroy();
      return;
    }
    const upstream = host.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host);
    for (const end of [socket, upstream]) {
      sockets.add(end);
      end.on('error', () => {});
      end.on('close', () => {
        sockets.delete(end);
        socket.destroy();
        upstream.destroy();
      });
    }
    socket.pipe(upstream);
    upstream.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: TcpProxy = {
    port: (server.address() as net.AddressInfo).port,
    refusing: false,
    get refused() {
      return refused;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
