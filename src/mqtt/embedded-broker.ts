import { createServer, type Socket } from 'node:net';

export interface EmbeddedBroker {
  url: string;
  port: number;
  /** Stops listening and drops every connection (clients see the broker go away). Safe twice. */
  close(): Promise<void>;
}

/**
 * An in-process MQTT 3.1.1 broker (aedes, memory only) for the demo and the tests. Rejects with the
 * listen error (EADDRINUSE when another broker already holds the port).
 */
export async function startEmbeddedBroker(options: { host?: string; port?: number } = {}): Promise<EmbeddedBroker> {
  const host = options.host ?? '127.0.0.1';
  // Loaded only when a broker is wanted: a device that talks to the operator's broker never pays for it.
  const { Aedes } = await import('aedes');
  const broker = await Aedes.createBroker();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    broker.handle(socket);
  });
  // A client that vanishes mid-packet is its own problem; the broker keeps serving the others.
  broker.on('clientError', () => {});
  broker.on('connectionError', () => {});
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    throw err;
  }
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port ?? 0;
  let closing: Promise<void> | null = null;
  return {
    url: `mqtt://${host}:${port}`,
    port,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => broker.close(() => resolve()));
        await closed;
      })();
      return closing;
    },
  };
}
