import type { FastifyInstance } from 'fastify';
import type { SandboxPayments } from './types.js';
import type { Clock } from '../util/index.js';
import { badRequest } from './http-errors.js';
import { fsPromises } from '../util/lazy-builtins.js';
import { renderSandboxNotFoundPage, renderSandboxPayPage } from './sandbox-page.js';

/** Sandbox ids are `sb_…`; anything outside this alphabet is not an id and is refused before the lookup. */
const INVOICE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const ASSETS_DIR = new URL('./sandbox/', import.meta.url);
const ASSETS: Record<string, string> = {
  'pay.js': 'text/javascript; charset=utf-8',
  'pay.css': 'text/css; charset=utf-8',
};

function parseInvoiceId(raw: string): string {
  if (!INVOICE_ID_PATTERN.test(raw)) throw badRequest('the invoice id must be 1 to 64 letters, digits, - or _');
  return raw;
}

/** Demo only: registered when `deps.sandbox` is set, so a device on a real provider answers 404 here. */
export function registerSandboxRoutes(app: FastifyInstance, sandbox: SandboxPayments, clock: Clock): void {
  app.get<{ Params: { invoiceId: string } }>('/sandbox/pay/:invoiceId', async (request, reply) => {
    const invoice = sandbox.describe(parseInvoiceId(request.params.invoiceId));
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store');
    if (!invoice) return reply.code(404).send(renderSandboxNotFoundPage());
    return reply.send(renderSandboxPayPage(invoice, clock.now()));
  });

  app.post<{ Params: { invoiceId: string } }>('/sandbox/pay/:invoiceId', async (request, reply) => {
    await sandbox.pay(parseInvoiceId(request.params.invoiceId));
    return reply.code(204).send();
  });

  app.get<{ Params: { file: string } }>('/sandbox/assets/:file', async (request, reply) => {
    const type = Object.hasOwn(ASSETS, request.params.file) ? ASSETS[request.params.file] : undefined;
    if (!type) return reply.callNotFound();
    const body = await fsPromises().readFile(new URL(request.params.file, ASSETS_DIR));
    return reply.type(type).send(body);
  });
}
