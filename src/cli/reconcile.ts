import { loadSettings } from '../settings/index.js';
import { openDatabase } from '../store/index.js';
import { ProviderError, providerWebhooks, type CanonicalStatus, type PaymentProvider, type WebhookTarget } from '../payments/index.js';
import { systemClock, toIso } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import { type CliIo, EXIT, print } from './io.js';
import { compareWithProvider, LOCAL_INVOICES_SQL, serviceAtWork, type Finding, type LocalInvoice } from '../ledger/compare.js';
import { isMoneyStatus } from '../orders/index.js';
import { parseSince, providerForCli } from './replay.js';

/** The Events API is read at most this many pages per run. */
const MAX_EVENT_PAGES = 500;
const LOCAL_INVOICES = `${LOCAL_INVOICES_SQL} WHERE oi.created_at >= ? ORDER BY oi.created_at`;

/** References are `<device.id>-<db>-<order>[-<nonce>]`: this device's, whatever database made them. Device ids are [a-z0-9-]. */
function ownsReference(deviceId: string, reference: unknown): boolean {
  return typeof reference === 'string' && new RegExp(`^${deviceId}-[^-]+-\\d+(-[0-9a-f]+)?$`).test(reference);
}

/**
 * Whether an event may concern an invoice of this device: its provider's own reading of the body
 * (payments/webhooks.ts) names a reference, and the reference is this device's. An event whose body
 * names no reference (a Gerege refund, a provider without a row there such as the sandbox) may be
 * this device's, so its invoice is read.
 */
function mayBeThisDevices(target: ((body: unknown) => WebhookTarget) | undefined, rawBody: Buffer, deviceId: string): boolean {
  if (!target) return true;
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return true;
  }
  const concerns = target(body);
  return concerns.kind !== 'reference' || ownsReference(deviceId, concerns.reference);
}

/** Compares this device's invoices since `sinceMs` with the provider's view of them. */
export async function reconcile(deps: { rows: LocalInvoice[]; provider: PaymentProvider; deviceId: string }, sinceMs: number) {
  const { rows, provider, deviceId } = deps;
  const findings: Finding[] = [];
  const inProgress: string[] = [];
  const known = new Set(rows.map((r) => r.invoice_id));

  for (const row of rows) {
    const base = { invoiceId: row.invoice_id, orderId: row.order_id, reference: row.reference, localState: row.state };
    let status: CanonicalStatus;
    let providerStatus: string;
    try {
      ({ status, providerStatus } = await provider.getInvoice(row.invoice_id));
    } catch (err) {
      findings.push({
        ...base,
        kind: 'unreadable',
        providerStatus: null,
        detail: `could not read it from the provider: ${errorMessage(err)}`,
      });
      continue;
    }
    const finding = compareWithProvider(row, status, providerStatus);
    if (finding) findings.push(finding);
    else if (serviceAtWork(row.state) && isMoneyStatus(status)) inProgress.push(`${row.invoice_id} (order ${row.order_id}, ${row.state})`);
  }

  // Paid invoices of this device the database has no row for (a restored or replaced database).
  let eventsRead = 0;
  if (provider.listEvents) {
    const target = providerWebhooks(provider.name)?.target;
    const unknown = new Set<string>();
    let query: { createdAfterSec?: number; startingAfter?: string } = { createdAfterSec: Math.floor(sinceMs / 1000) };
    for (let page = 0; page < MAX_EVENT_PAGES; page += 1) {
      const result = await provider.listEvents(query);
      eventsRead += result.events.length;
      for (const { event, rawBody } of result.events) {
        if (event.objectId === null || known.has(event.objectId)) continue;
        if (mayBeThisDevices(target, rawBody, deviceId)) unknown.add(event.objectId);
      }
      const last = result.events.at(-1);
      if (!result.hasMore || !last) break;
      query = { startingAfter: last.event.eventId };
    }
    for (const invoiceId of unknown) {
      try {
        const invoice = await provider.getInvoice(invoiceId);
        if (ownsReference(deviceId, invoice.reference) && isMoneyStatus(invoice.status)) {
          findings.push({
            kind: 'unknown_here',
            invoiceId,
            orderId: null,
            reference: invoice.reference,
            providerStatus: invoice.providerStatus,
            localState: null,
            detail: 'paid at the provider for this device; this database has no such invoice',
          });
        }
      } catch (err) {
        if (!(err instanceof ProviderError && err.kind === 'not_found')) {
          findings.push({
            kind: 'unreadable',
            invoiceId,
            orderId: null,
            reference: null,
            providerStatus: null,
            localState: null,
            detail: `could not read it from the provider: ${errorMessage(err)}`,
          });
        }
      }
    }
  }
  return { findings, inProgress, invoicesHere: rows.length, eventsRead };
}

/**
 * `vendgate reconcile [--since ISO] [--json]`: every paid invoice of this device with no vend or
 * refund here, and every vend here without a paid invoice there. Exit 1 when the list is not empty.
 */
export async function reconcileCommand(options: { config?: string; since?: string; json?: boolean }, io: CliIo): Promise<number> {
  const sinceMs = parseSince(options.since, systemClock.now());
  const { settings } = loadSettings({ path: options.config, env: io.env });
  const db = openDatabase(settings.storage.path, { readonly: true });
  const { provider, close } = await providerForCli(settings, io);
  try {
    const rows = db.prepare(LOCAL_INVOICES).all(sinceMs) as LocalInvoice[];
    const report = await reconcile({ rows, provider, deviceId: settings.device.id }, sinceMs);
    if (options.json) {
      print(io.stdout, JSON.stringify({ since: toIso(sinceMs), ...report }, null, 2));
    } else {
      print(
        io.stdout,
        `reconcile since ${toIso(sinceMs)}: ${report.invoicesHere} invoice(s) here, ${report.eventsRead} provider event(s) read`,
      );
      for (const f of report.findings) {
        print(
          io.stdout,
          `${f.kind.toUpperCase().padEnd(16)}  ${f.invoiceId}  ${f.reference ?? '-'}  provider: ${f.providerStatus ?? '?'}  here: ${f.localState ?? '-'}  ${f.detail}`,
        );
      }
      if (report.inProgress.length > 0)
        print(io.stdout, `still being handled by the service (not counted): ${report.inProgress.join(', ')}`);
      print(io.stdout, report.findings.length === 0 ? 'nothing to reconcile' : `${report.findings.length} invoice(s) need attention`);
    }
    return report.findings.length === 0 ? EXIT.OK : EXIT.FAILURE;
  } finally {
    close();
    db.close();
  }
}
