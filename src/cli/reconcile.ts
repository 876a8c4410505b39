import { loadSettings } from '../settings/index.js';
import { openDatabase } from '../store/index.js';
import { ProviderError, type CanonicalStatus, type PaymentProvider } from '../payments/index.js';
import { systemClock, toIso } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import { type CliIo, EXIT, print } from './io.js';
import { parseSince, providerForCli } from './replay.js';

/** One invoice of this device as the database sees it. */
interface LocalInvoice {
  invoice_id: string;
  order_id: number;
  reference: string;
  state: string;
  current: number;
  vend_state: string | null;
  vend_outcome: string | null;
  refund_state: string | null;
}

export type FindingKind = 'paid_not_vended' | 'vended_not_paid' | 'unknown_here' | 'needs_a_person' | 'unreadable';

export interface Finding {
  kind: FindingKind;
  invoiceId: string;
  orderId: number | null;
  reference: string | null;
  providerStatus: string | null;
  localState: string | null;
  detail: string;
}

const MONEY: readonly CanonicalStatus[] = ['paid', 'authorized', 'partially_refunded'];
/** A local state in which the service is still working on the payment (not a finding while it runs). */
const IN_PROGRESS = ['paid', 'authorized', 'vending', 'refunding'];
/** The Events API is read at most this many pages per run. */
const MAX_EVENT_PAGES = 500;

// Read-only report over the contract tables (DESIGN.md: operators read them); it writes nothing.
const LOCAL_INVOICES = `
  SELECT oi.invoice_id, o.id AS order_id, o.reference, o.state, (o.invoice_id = oi.invoice_id) AS current,
         v.state AS vend_state, v.outcome AS vend_outcome, r.state AS refund_state
    FROM order_invoices oi
    JOIN orders o ON o.id = oi.order_id
    LEFT JOIN vend_jobs v ON v.order_id = o.id
    LEFT JOIN refunds r ON r.invoice_id = oi.invoice_id
   WHERE oi.created_at >= ?
   ORDER BY oi.created_at`;

function vendedHere(row: LocalInvoice): boolean {
  if (!row.current) return false;
  return (row.vend_state === 'done' && row.vend_outcome !== null) || (row.vend_state === 'resolved' && row.vend_outcome === 'resolved_vended');
}

/** References are `<device.id>-<db>-<order>`: this device's, whatever database made them. Device ids are [a-z0-9-]. */
function ownsReference(deviceId: string, reference: unknown): boolean {
  return typeof reference === 'string' && new RegExp(`^${deviceId}-[^-]+-\\d+$`).test(reference);
}

/** The reference an event body carries (Gerege `data.object.reference`, sandbox too), if any. */
function referenceInEvent(rawBody: Buffer): string | undefined {
  try {
    const body = JSON.parse(rawBody.toString('utf8')) as { data?: { object?: { reference?: unknown } }; invoice?: { externalOrderId?: unknown } };
    const reference = body.data?.object?.reference ?? body.invoice?.externalOrderId;
    return typeof reference === 'string' ? reference : undefined;
  } catch {
    return undefined;
  }
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
      findings.push({ ...base, kind: 'unreadable', providerStatus: null, detail: `could not read it from the provider: ${errorMessage(err)}` });
      continue;
    }
    const vended = vendedHere(row);
    const refundedHere = row.refund_state !== null && row.refund_state !== 'failed';
    if (row.state === 'vend_uncertain') {
      findings.push({ ...base, kind: 'needs_a_person', providerStatus, detail: `the vend may or may not have happened: vendgate resolve ${row.order_id} --vended|--not-vended` });
    } else if (MONEY.includes(status) && !vended && !refundedHere) {
      if (IN_PROGRESS.includes(row.state)) inProgress.push(`${row.invoice_id} (order ${row.order_id}, ${row.state})`);
      else findings.push({ ...base, kind: 'paid_not_vended', providerStatus, detail: 'paid at the provider; no vend and no refund here' });
    } else if (vended && !MONEY.includes(status) && status !== 'refunded') {
      findings.push({ ...base, kind: 'vended_not_paid', providerStatus, detail: `vended here; the provider says ${providerStatus}` });
    }
  }

  // Paid invoices of this device the database has no row for (a restored or replaced database).
  let eventsRead = 0;
  if (provider.listEvents) {
    const unknown = new Set<string>();
    let query: { createdAfterSec?: number; startingAfter?: string } = { createdAfterSec: Math.floor(sinceMs / 1000) };
    for (let page = 0; page < MAX_EVENT_PAGES; page += 1) {
      const result = await provider.listEvents(query);
      eventsRead += result.events.length;
      for (const { event, rawBody } of result.events) {
        if (event.objectId === null || known.has(event.objectId)) continue;
        const reference = referenceInEvent(rawBody);
        if (reference === undefined || ownsReference(deviceId, reference)) unknown.add(event.objectId);
      }
      const last = result.events.at(-1);
      if (!result.hasMore || !last) break;
      query = { startingAfter: last.event.eventId };
    }
    for (const invoiceId of unknown) {
      try {
        const invoice = await provider.getInvoice(invoiceId);
        if (ownsReference(deviceId, invoice.reference) && MONEY.includes(invoice.status)) {
          findings.push({ kind: 'unknown_here', invoiceId, orderId: null, reference: invoice.reference, providerStatus: invoice.providerStatus, localState: null, detail: 'paid at the provider for this device; this database has no such invoice' });
        }
      } catch (err) {
        if (!(err instanceof ProviderError && err.kind === 'not_found')) {
          findings.push({ kind: 'unreadable', invoiceId, orderId: null, reference: null, providerStatus: null, localState: null, detail: `could not read it from the provider: ${errorMessage(err)}` });
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
  const { provider, close } = providerForCli(settings, io);
  try {
    const rows = db.prepare(LOCAL_INVOICES).all(sinceMs) as LocalInvoice[];
    const report = await reconcile({ rows, provider, deviceId: settings.device.id }, sinceMs);
    if (options.json) {
      print(io.stdout, JSON.stringify({ since: toIso(sinceMs), ...report }, null, 2));
    } else {
      print(io.stdout, `reconcile since ${toIso(sinceMs)}: ${report.invoicesHere} invoice(s) here, ${report.eventsRead} provider event(s) read`);
      for (const f of report.findings) {
        print(io.stdout, `${f.kind.toUpperCase().padEnd(16)}  ${f.invoiceId}  ${f.reference ?? '-'}  provider: ${f.providerStatus ?? '?'}  here: ${f.localState ?? '-'}  ${f.detail}`);
      }
      if (report.inProgress.length > 0) print(io.stdout, `still being handled by the service (not counted): ${report.inProgress.join(', ')}`);
      print(io.stdout, report.findings.length === 0 ? 'nothing to reconcile' : `${report.findings.length} invoice(s) need attention`);
    }
    return report.findings.length === 0 ? EXIT.OK : EXIT.FAILURE;
  } finally {
    close();
    db.close();
  }
}
