import Fastify, { type FastifyInstance } from 'fastify';
import { networkInterfaces } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { SandboxPayments } from './types.js';
import type { Clock, Logger } from '../util/index.js';
import { installErrorHandling } from './http-errors.js';
import { registerSandboxRoutes } from './sandbox-routes.js';
import { SECURITY_HEADERS } from './security-headers.js';
import { NO_JSON_SCHEMAS } from '../util/fastify-schemas.js';

/** The machine's first non-loopback IPv4 address (what a phone on the same Wi-Fi reaches), or null. */
export function lanAddress(interfaces: ReturnType<typeof networkInterfaces> = networkInterfaces()): string | null {
  for (const addresses of Object.values(interfaces)) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return address.address;
    }
  }
  return null;
}

export interface SandboxLanServer {
  start(): Promise<{ port: number }>;
  stop(): Promise<void>;
}

/**
 * Demo only: the sandbox pay page, and nothing else, on every interface, so a phone on the same
 * network can open the QR. The kiosk page and the local API stay on 127.0.0.1; a real provider has
 * its own pay page and never starts this.
 */
export function createSandboxLanServer(
  deps: { sandbox: SandboxPayments; clock: Clock; logger: Logger },
  settings: { port: number },
): SandboxLanServer {
  const log = deps.logger.child({ module: 'sandbox-lan' });
  let app: FastifyInstance | null = null;
  return {
    async start() {
      app = Fastify({ logger: false, bodyLimit: 1_024, schemaController: NO_JSON_SCHEMAS });
      app.removeContentTypeParser('text/plain');
      installErrorHandling(app, log, 1_024);
      app.addHook('onSend', async (_request, reply, payload) => {
        reply.headers(SECURITY_HEADERS);
        return payload;
      });
      registerSandboxRoutes(app, deps.sandbox, deps.clock);
      await app.listen({ host: '0.0.0.0', port: settings.port });
      const { port } = app.server.address() as AddressInfo;
      log.info({ port }, 'sandbox pay page open to the local network');
      return { port };
    },
    async stop() {
      const running = app;
      app = null;
      await running?.close();
    },
  };
}
