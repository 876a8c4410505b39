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

/** The command-line option that moves the port a setting names (`vendgate start` and `selftest` take it). */
export const PORT_FLAGS: Readonly<Record<string, string>> = {
  'http.local.port': '--local-port',
  'http.webhook.port': '--webhook-port',
  'mqtt.embeddedPort': '--broker-port',
};

/**
 * One line that says which option to use beside the program holding `port`:
 * "start with --local-port 8081 (npm start -- --local-port 8081; a device: http.local.port: 8081)".
 */
export function movePortAdvice(setting: string, port: number, free: number | null): string {
  const flag = PORT_FLAGS[setting];
  const next = free ?? port + 1;
  if (!flag) return `set ${setting} to a free port (${next})`;
  return `start with ${flag} ${next} (npm start -- ${flag} ${next}; a device: ${setting}: ${next})`;
}
