import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FaultConfig, SimulatorRecords } from './types.js';
import type { PayPageView, ProviderBackend, SimContext } from './context.js';
import { faultProblems } from './faults.js';
import { SimHttpError, checkObjectBody } from './request-checks.js';

export interface AdminActions {
  getFaults(): FaultConfig;
  setFaults(faults: Partial<FaultConfig>): void;
  records(): SimulatorRecords;
}

/**
 * /__sim/*: the customer's side (pay page) and the test's side (faults, records, expiry). Never
 * subject to faults and never recorded in `requests`, so that observing a run does not change it.
 */
export function registerAdminRoutes(app: FastifyInstance, deps: { ctx: SimContext; backend: ProviderBackend; admin: AdminActions }): void {
  const { backend, admin } = deps;
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

  function current(id: string): PayPageView {
    const view = backend.view(id, false);
    if (!view) throw new SimHttpError(404, 'not_found', `no invoice ${id}`);
    return view;
  }

  app.get('/__sim/faults', async () => admin.getFaults());
  app.post('/__sim/faults', async (request) => {
    const problems = faultProblems(request.body);
    if (problems.length > 0) throw new SimHttpError(400, 'invalid_request', problems.join('; '));
    admin.setFaults(request.body as Partial<FaultConfig>);
    return admin.getFaults();
  });

  app.get('/__sim/records', async () => admin.records());

  app.get('/__sim/pay/:id', async (request, reply) => {
    const view = backend.view(idOf(request), true);
    reply.type('text/html; charset=utf-8');
    if (!view) return reply.code(404).send(page('Not found', `<p>No invoice <code>${escapeHtml(idOf(request))}</code>.</p>`));
    return page(`Pay ${view.amount} ${view.currency}`, payForm(view));
  });

  app.post('/__sim/pay/:id', async (request, reply) => {
    const id = idOf(request);
    const html = (request.query as { format?: string }).format === 'html';
    const body = checkObjectBody(request.body ?? {}, ['amount']);
    const amount = body.amount === undefined || body.amount === '' ? undefined : Number(body.amount);
    try {
      backend.pay(id, amount);
    } catch (err) {
      if (!html || !(err instanceof SimHttpError)) throw err;
      return reply
        .code(err.status)
        .type('text/html; charset=utf-8')
        .send(page('Payment refused', `<p>${escapeHtml(err.message)}</p>`));
    }
    const view = current(id);
    if (html)
      return reply
        .type('text/html; charset=utf-8')
        .send(page('Paid', `<p>Thank you. Invoice <code>${escapeHtml(id)}</code> is now <b>${escapeHtml(view.status)}</b>.</p>`));
    return { id, status: view.status };
  });

  app.post('/__sim/expire/:id', async (request) => {
    backend.expire(idOf(request));
    return { id: idOf(request), status: current(idOf(request)).status };
  });

  app.post('/__sim/fail/:id', async (request) => {
    backend.fail(idOf(request));
    return { id: idOf(request), status: current(idOf(request)).status };
  });

  // The merchant refunds in the provider's dashboard: the refund and its event, as the provider makes them.
  app.post('/__sim/refund/:id', async (request) => {
    const body = checkObjectBody(request.body ?? {}, ['amount']);
    const amount = body.amount === undefined ? current(idOf(request)).amount : Number(body.amount);
    if (!Number.isInteger(amount) || amount <= 0) throw new SimHttpError(400, 'invalid_request', 'amount: a positive integer is required');
    backend.refundOutside(idOf(request), amount);
    return { id: idOf(request), refunded: amount, status: current(idOf(request)).status };
  });

  app.post('/__sim/revoke-tokens', async () => {
    backend.revokeTokens();
    return { revoked: true };
  });
}

function payForm(view: PayPageView): string {
  const facts = `<p>Invoice <code>${escapeHtml(view.id)}</code>${view.reference ? ` for order <code>${escapeHtml(view.reference)}</code>` : ''}: status <b>${escapeHtml(view.status)}</b>.</p>`;
  if (!view.payable) return `${facts}<p>This invoice can no longer be paid.</p>`;
  return `${facts}<form method="post" action="/__sim/pay/${encodeURIComponent(view.id)}?format=html">
<button type="submit" style="font-size:1.5em;padding:.5em 2em">Pay ${view.amount} ${escapeHtml(view.currency)}</button></form>`;
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title></head><body style="font-family:sans-serif;max-width:30em;margin:2em auto">
<h1>${escapeHtml(title)}</h1>${body}<p style="color:#888">vendgate provider simulator</p></body></html>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
