import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** In-flight requests get this long to finish when the listener stops; then their sockets are cut. */
export const STOP_GRACE_MS = 2_000;

/**
 * Browsers open spare connections that never carry a request (Chromium's preconnect, undici's
 * pool). Node's closeIdleConnections() leaves those alone, so server.close() would wait for the
 * client's keep-alive timeout or the 60 s headers timeout. This tracker cuts them at stop.
 */
export function trackConnections(server: Server) {
  const active = new Map<Socket, number>();
  let stopping = false;

  server.on('connection', (socket: Socket) => {
    active.set(socket, 0);
    socket.once('close', () => active.delete(socket));
  });
  server.on('request', (request, response) => {
    const socket = request.socket;
    active.set(socket, (active.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (active.get(socket) ?? 1) - 1;
      active.set(socket, left);
      if (stopping && left === 0) socket.destroy();
    });
  });

  return {
    /** Destroys every socket that carries no request now; the others close when their response ends. */
    closeIdle() {
      stopping = true;
      for (const [socket, requests] of active) if (requests === 0) socket.destroy();
    },
    closeAll() {
      for (const socket of active.keys()) socket.destroy();
    },
  };
}
