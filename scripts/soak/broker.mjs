import { createServer } from 'node:net';
import { Aedes } from 'aedes';

/**
 * An MQTT broker the soak can stop and start on the same port (the operator's broker going away).
 * It records every PUBLISH a client sends, across restarts — the operators' view of the device.
 */
export async function startBroker() {
  const received = [];
  let running = null;
  let port = 0;

  async function start() {
    if (running) return;
    const broker = await Aedes.createBroker();
    broker.on('publish', (packet, client) => {
      if (client) received.push({ topic: packet.topic, payload: packet.payload.toString(), clientId: client.id, at: Date.now() });
    });
    broker.on('clientError', () => {});
    broker.on('connectionError', () => {});
    const sockets = new Set();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
      broker.handle(socket);
    });
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    port = server.address().port;
    running = {
      async close() {
        const closed = new Promise((resolve) => server.close(() => resolve()));
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => broker.close(() => resolve()));
        await closed;
      },
    };
  }

  await start();
  return {
    url: `mqtt://127.0.0.1:${port}`,
    received,
    get up() {
      return running !== null;
    },
    start,
    async stop() {
      const r = running;
      running = null;
      await r?.close();
    },
  };
}
