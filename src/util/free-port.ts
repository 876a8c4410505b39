import { createServer } from 'node:net';

/**
 * The first port from `from` upwards (at most `tries` of them) that this machine lets us listen on
 * right now, for a message that names the option to use ("--broker-port 1884"). Only a suggestion:
 * the port is released at once. Null when none of them is free.
 */
export async function firstFreePort(host: string, from: number, tries = 20): Promise<number | null> {
  for (let port = from; port < from + tries && port <= 65_535; port++) {
    if (await canListen(host, port)) return port;
  }
  return null;
}

function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
