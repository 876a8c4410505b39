import type { FastifyInstance } from 'fastify';
import type { DeviceState, KioskDeps, OrderView } from './types.js';
import type { QrRenderer } from './qr.js';
import { badRequest } from './http-errors.js';
import { ErrorCodes, VendgateError } from '../util/index.js';
import { OrderRateLimitError, type createOrderPress } from './order-press.js';

/** Same rule as catalog slots in settings: short, no spaces or markup. */
const SLOT_PATTERN = /^[A-Za-z0-9_-]{1,16}$/;
/** Order ids are SQLite rowids: positive, and small enough to be exact in a JS number. */
const ORDER_ID_PATTERN = /^[1-9][0-9]{0,15}$/;

export type StateWithQr = DeviceState & { qrSvg: string | null; receiptQrSvg: string | null };

/** The QRs of the current order (pay, fiscal receipt) travel with the state so the page never renders one itself. */
export async function withQr(state: DeviceState, qr: QrRenderer): Promise<StateWithQr> {
  const payUrl = state.order?.payUrl;
  const receiptData = state.receipt?.qrData;
  return {
    ...state,
    qrSvg: payUrl ? await qr.svg(payUrl) : null,
    receiptQrSvg: receiptData ? await qr.svg(receiptData) : null,
  };
}

export function parseCreateBody(body: unknown): { slot?: string } {
  if (body === undefined) throw badRequest('the body is empty; send a JSON object such as {"slot":"A1"} ({} for a turnstile)');
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('the body must be a JSON object such as {"slot":"A1"} ({} for a turnstile)');
  }
  for (const key of Object.keys(body)) {
    if (key !== 'slot') throw badRequest(`unknown field "${key.slice(0, 32)}"; only "slot" is accepted`);
  }
  const slot = (body as { slot?: unknown }).slot;
  if (slot === undefined) return {};
  if (typeof slot !== 'string' || !SLOT_PATTERN.test(slot)) {
    throw badRequest('slot must be a catalog slot: 1 to 16 letters, digits, - or _');
  }
  return { slot };
}

export function parseOrderId(raw: string): number {
  const id = Number(raw);
  if (!ORDER_ID_PATTERN.test(raw) || !Number.isSafeInteger(id)) {
    throw badRequest('the order id must be a positive integer');
  }
  return id;
}

export function registerApiRoutes(app: FastifyInstance, deps: KioskDeps, qr: QrRenderer, press: ReturnType<typeof createOrderPress>): void {
  const orderWithQr = async (order: OrderView) => ({
    ...order,
    ...(order.state === 'awaiting_payment' && order.payUrl ? { qrSvg: await qr.svg(order.payUrl) } : {}),
  });

  app.post('/api/orders', async (request, reply) => {
    // Validate completely before the order service sees anything: bad input changes nothing.
    const { slot } = parseCreateBody(request.body);
    let pressed;
    try {
      pressed = await press.press(slot === undefined ? {} : { slot });
    } catch (err) {
      if (err instanceof OrderRateLimitError) reply.header('retry-after', String(err.retryAfterSec));
      throw err;
    }
    const { created, repeated } = pressed;
    const qrSvg = created.payUrl ? await qr.svg(created.payUrl) : null;
    // A repeated press created nothing: 200 with the order it already has.
    return reply.code(repeated ? 200 : 201).send({
      orderId: created.orderId,
      reference: created.reference,
      state: created.state,
      invoiceId: created.invoiceId,
      payUrl: created.payUrl,
      qrSvg,
      expiresAt: created.expiresAt,
    });
  });

  app.get<{ Params: { id: string } }>('/api/orders/:id', async (request) => {
    const id = parseOrderId(request.params.id);
    const order = deps.orders.get(id);
    if (!order) throw new VendgateError(ErrorCodes.ORDER_NOT_FOUND, `order ${id} does not exist`);
    return orderWithQr(order);
  });

  app.post<{ Params: { id: string } }>('/api/orders/:id/cancel', async (request) => {
    const id = parseOrderId(request.params.id);
    return orderWithQr(await deps.orders.cancel(id));
  });

  app.get('/api/state', async () => withQr(deps.state(), qr));

  app.get('/healthz', async (_request, reply) => {
    let health: ReturnType<KioskDeps['health']>;
    try {
      health = deps.health();
    } catch {
      // A check that throws is a failing check: the watchdog must see 503, not a 500 that looks like a bug here.
      health = { ok: false, checks: { health: { ok: false, detail: 'health check threw' } } };
    }
    return reply.code(health.ok ? 200 : 503).send({ ok: health.ok, checks: health.checks });
  });

  app.get('/metrics', async (_request, reply) => {
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(deps.metrics());
  });
}
