import type { SandboxPayments } from './types.js';
import { formatAmount } from './public/money.js';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
}

type Invoice = NonNullable<ReturnType<SandboxPayments['describe']>>;

/** Statuses after which the sandbox refuses a payment; anything else still shows the Pay button. */
const CLOSED_STATUSES = new Set(['paid', 'authorized', 'canceled', 'expired', 'partially_refunded', 'refunded']);

/**
 * The sandbox bank's "phone" page, opened by scanning the QR in the demo. Every value is escaped:
 * the reference and id come from the order service, the status from the sandbox.
 */
export function renderSandboxPayPage(invoice: Invoice, nowMs: number): string {
  const open = !CLOSED_STATUSES.has(invoice.status);
  const payable = open && invoice.expiresAt > nowMs;
  const statusText = open && !payable ? 'expired' : invoice.status;
  return page(`
    <p class="label">Amount</p>
    <p class="amount" id="amount">${escapeHtml(formatAmount(invoice.amount, invoice.currency))}</p>
    <dl>
      <dt>Reference</dt><dd id="reference">${escapeHtml(invoice.reference)}</dd>
      <dt>Invoice</dt><dd>${escapeHtml(invoice.id)}</dd>
      <dt>Status</dt><dd id="status" data-status="${escapeHtml(statusText)}">${escapeHtml(statusText)}</dd>
    </dl>
    <p class="message" id="message" role="status" aria-live="polite"></p>
    <button type="button" id="pay" data-invoice-id="${escapeHtml(invoice.id)}"${payable ? '' : ' hidden'}>Pay</button>`);
}

export function renderSandboxNotFoundPage(): string {
  return page('<p class="message" id="message">This invoice does not exist.</p>');
}

function page(body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandbox bank</title>
<link rel="stylesheet" href="/sandbox/assets/pay.css">
<script type="module" src="/sandbox/assets/pay.js"></script>
</head>
<body>
<main class="phone">
  <header><span class="bank">Sandbox bank</span><span class="demo">demo, no real money</span></header>
  <section class="card">${body}
  </section>
</main>
</body>
</html>
`;
}
