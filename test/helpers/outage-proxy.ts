import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a server (the provider simulator): `cut()` is a real outage of the
 * provider as the device sees it (connections refused, open ones reset), `restore()` brings it back
 * on the same port. Not a flag inside the service: the service only sees sockets fail.
 */
export async function startOutageProxy(target: { host?: string; port: number }) {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;

  function listen(): Promise<void> {
    server = createServer((client) => {
      const upstream = connect(target.port, target.host ?? '127.0.0.1');
      sockets.add(client);
      sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    return new Promise((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(port, '127.0.0.1', () => {
        port = (server!.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  await listen();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get up() {
      return server !== null;
    },
    /** The provider goes away: new connections are refused, open ones are reset. */
    async cut(): Promise<void> {
      const closing = server;
      server = null;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      await new Promise<void>((resolve) => (closing ? closing.close(() => resolve()) : resolve()));
    },
    async restore(): Promise<void> {
      if (server) return;
      await listen();
    },
    async stop(): Promise<void> {
      await this.cut();
    },
  };
}

export type OutageProxy = Awaited<ReturnType<typeof startOutageProxy>>;
