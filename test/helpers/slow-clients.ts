import { connect, type Socket } from 'node:net';

/**
 * Hostile HTTP clients on real sockets: each sends a request line and headers (or only part of
 * them) and then drips bytes slowly, the cheapest way to hold a listener's connections open.
 */
export interface SlowClients {
  /** Sockets currently open (connected and not yet closed by the server). */
  open(): number;
  /** Sockets the server has closed so far. */
  closedByServer(): number;
  /** Stops reconnecting and destroys every socket. */
  stop(): void;
}

export interface SlowClientOptions {
  url: string;
  count: number;
  /** `body`: full headers, then the body one byte at a time. `headers`: the headers one byte at a time. `silent`: nothing at all. */
  mode: 'body' | 'headers' | 'silent';
  /** Between two dripped bytes. */
  dripEveryMs?: number;
  /** Open a new connection when the server cuts one (an attacker keeps trying). */
  reconnect?: boolean;
  path?: string;
}

export function startSlowClients(options: SlowClientOptions): SlowClients {
  const { hostname, port } = new URL(options.url);
  const sockets = new Set<Socket>();
  let closedByServer = 0;
  let stopped = false;
  const path = options.path ?? '/webhooks/sandbox';
  const head = `POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n`;

  function open(): void {
    if (stopped) return;
    const socket = connect({ host: hostname, port: Number(port) });
    sockets.add(socket);
    let timer: NodeJS.Timeout | null = null;
    let sent = 0;
    socket.on('connect', () => {
      if (options.mode === 'body') socket.write(head);
      if (options.mode === 'silent') return;
      timer = setInterval(() => {
        if (socket.destroyed) return;
        const chunk = options.mode === 'headers' ? head[sent % head.length]! : '{';
        sent += 1;
        socket.write(chunk);
      }, options.dripEveryMs ?? 200);
    });
    socket.on('data', () => {
      /* a 408 or 503 before the close: read and ignore */
    });
    socket.on('error', () => {
      /* reset by the server */
    });
    socket.on('close', () => {
      if (timer) clearInterval(timer);
      sockets.delete(socket);
      if (stopped) return;
      closedByServer += 1;
      // A short pause, as a real client would take; the reconnect itself is what matters.
      if (options.reconnect) setTimeout(open, 50);
    });
  }

  for (let i = 0; i < options.count; i += 1) open();
  return {
    open: () => [...sockets].filter((s) => !s.connecting && !s.destroyed).length,
    closedByServer: () => closedByServer,
    stop() {
      stopped = true;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
  };
}
