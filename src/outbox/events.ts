/**
 * The events operators receive on `<prefix>/<deviceId>/events` (and `dex`): one zod schema per event
 * name, the contract with their tools. From this one table come the type every producer's
 * `outbox.event(type, payload)` is checked against, the MQTT section of docs/reference.md and
 * docs/mqtt-events.schema.json (scripts/mqtt-contract.ts writes both; test/repo/docs/mqtt-contract.test.ts
 * fails when the committed files differ from what this table says).
 *
 * The money path imports only the types of this file (`import type`): zod is never evaluated on its
 * account, and nothing here imports mqtt/ (ARCHITECTURE.md, `money-path-never-waits-on-the-broker`).
 *
 * Every event on the wire is the envelope `{ seq, id, type, at, deviceId }` followed by the payload
 * below (src/outbox/outbox.ts writes it, src/mqtt/publisher.ts adds `seq`). Adding a field is
 * compatible; renaming or removing one breaks operators' tools: say so in the release notes.
 */
import * as z from 'zod';

const orderId = z.number().int().describe('the local order number');
const reference = z.string().describe('the global order reference <device>-<db>-<order>-<nonce>');
const slot = z.string().nullable().describe('the slot (null: a turnstile, or the machine chooses)');
const invoiceId = z.string().describe("the provider's invoice id");
const amount = z.number().int().describe("in the currency's smallest unit");
const by = z.string().describe('who did it (an operator, `cli`, `mqtt (key …, request …)`, a technician)');
const detail = z.string().describe('what happened, in words');
const refundKind = z.enum(['refund', 'void']).describe('void: a held authorization released; refund: taken money given back');
const receiptKind = z.enum(['sale', 'return']);
const status = z.enum(['pending', 'authorized', 'paid', 'canceled', 'expired', 'partially_refunded', 'refunded']);
const channel = z.enum(['poll', 'webhook', 'backfill', 'create', 'replay', 'refund', 'expiry', 'cancel', 'recovery', 'reconcile']);
const pair = z.object({ count: z.number().int(), value: z.number().int() });
const order = { orderId, reference };
const vend = { orderId, reference, slot };

/** One event: where it goes (relative topic) and what it says. */
function event<T extends z.ZodRawShape, Topic extends 'events' | 'dex' = 'events'>(description: string, shape: T, topic?: Topic) {
  return { topic: (topic ?? 'events') as Topic, schema: z.object(shape).describe(description) };
}

export const EVENTS = {
  'order.created': event('an order was written, before its invoice is asked for', {
    ...order,
    source: z.string().describe('kiosk | button | mdb | mqtt | cli'),
    slot,
    amount,
    currency: z.string(),
  }),
  'invoice.created': event("the provider's invoice is attached to the order (synced before any QR is shown)", {
    ...order,
    invoiceId,
    amount,
    currency: z.string(),
    expiresAt: z.string().describe('ISO time the invoice expires'),
  }),
  'order.failed': event('the invoice could not be created: the order is closed', {
    ...order,
    code: z.string().describe('VG_ERR_* (docs/errors.md)'),
    message: z.string(),
  }),
  'payment.observed': event('a new reading of an invoice (a status not seen before for it)', {
    ...order,
    invoiceId,
    status,
    channel: channel.describe('how it was learned'),
  }),
  'vend.queued': event('a paid order got its one vend job', vend),
  'vend.started': event('the vend is claimed (synced) and the machine is being driven', vend),
  'vend.succeeded': event('the machine delivered', { ...vend, outcome: z.string().describe("the actuator's word (vended, …)") }),
  'vend.failed': event('nothing came out for sure: the money goes back', {
    ...vend,
    outcome: z.string(),
    detail: detail.nullable(),
  }),
  'vend.uncertain': event('the machine may or may not have delivered: a person decides (alarm vend_uncertain/<order>)', {
    ...vend,
    detail,
  }),
  'vend.resolved': event('a person settled an uncertain vend', { ...order, vended: z.boolean(), by }),
  'vend.settled_by_provider': event('an interrupted vend whose money the provider already gave back: not vended', {
    ...order,
    detail,
  }),
  'case.settled': event('a person settled a parked case (vendgate settle, cmd/settle)', {
    case: z.string().describe("the case's alarm name, e.g. orphan_invoice/<invoice>"),
    outcome: z.enum(['refund', 'goods-went-out', 'not-ours', 'checked']),
    by,
    detail,
    orderId: orderId.optional(),
  }),
  'refund.requested': event('a refund (or void) is queued', {
    ...order,
    invoiceId,
    kind: refundKind,
    amount,
    reason: z.string(),
  }),
  'refund.succeeded': event('the provider confirmed the refund', { orderId, invoiceId, kind: refundKind, amount }),
  'refund.unknown': event('the refund answer was lost: the invoice is read until it says', { orderId, invoiceId, detail }),
  'refund.failed': event('the provider refused the refund: give the money back by hand (alarm refund_failed/<order>)', {
    orderId,
    invoiceId,
    detail,
  }),
  'capture.succeeded': event('manual capture: the held money was taken after the vend', { ...order, invoiceId: invoiceId.nullable() }),
  'capture.failed': event('manual capture: the money can never be taken (alarm capture_failed/<order>)', {
    ...order,
    invoiceId: invoiceId.nullable(),
    detail,
  }),
  'order.expired': event('the invoice expired unpaid', {
    ...order,
    reason: z.string().optional().describe('closed at our request: why'),
    by: z.literal('provider').optional().describe('present when the provider closed it'),
  }),
  'order.canceled': event('the order was canceled unpaid', {
    ...order,
    reason: z.string().optional().describe('closed at our request: why'),
    by: z.literal('provider').optional().describe('present when the provider closed it'),
  }),
  'device.out_of_service': event('an operator stopped or resumed taking orders', {
    on: z.boolean(),
    reason: z.string().nullable(),
    by,
  }),
  'reconcile.mismatch': event('the provider and the database disagree about an order (alarm reconcile/<order>)', {
    ...order,
    invoiceId,
    kind: z.string().describe('what kind of disagreement (needs_a_person, …)'),
  }),
  'database.restored': event('this start runs a restored or replaced database (docs/when-the-pi-fails.md)', {
    lineage: z.enum(['continuing', 'restored', 'replaced', 'new']),
    restored: z.boolean(),
    replaced: z.boolean(),
    cloned: z.boolean(),
    detail: detail.nullable(),
  }),
  'storage.recovered': event('the card takes writes again', {
    kind: z.string().nullable().describe('the fault that cleared (full, readonly, io_error)'),
    since: z.string().nullable().describe('ISO time the fault began'),
  }),
  'catalog.applied': event('a new catalog version is in use', {
    version: z.string(),
    previousVersion: z.string(),
    source: z.string().describe('who applied it'),
    items: z.number().int().describe('how many items it has'),
  }),
  'catalog.rejected': event('a catalog document was refused; nothing changed', {
    version: z.string().nullable(),
    problems: z.array(z.string()),
  }),
  'catalog.rolled_back': event('the previous catalog version is in use again', {
    from: z.string(),
    to: z.string(),
    source: z.string(),
  }),
  'slot.jammed': event('a slot failed too often in a row: it sells nothing until cleared', {
    slot: z.string(),
    failures: z.number().int(),
    reason: z.string(),
  }),
  'slot.cleared': event('a technician cleared a jam', { slot: z.string(), by }),
  'stock.refilled': event('a slot was counted or refilled', {
    slot: z.string(),
    stock: z.number().int(),
    previous: z.number().int().nullable().describe('null: never counted before'),
    by,
  }),
  'stock.sold_out': event("a slot's counted stock reached 0", { slot: z.string() }),
  'command.handled': event('the audit record of one verified command (done, refused or replayed)', {
    command: z.string(),
    requestId: z.string().nullable(),
    keyId: z.string().nullable(),
    verified: z.boolean(),
    ok: z.boolean(),
    code: z.string().nullable(),
    replay: z.literal(true).optional(),
    orderId: orderId.optional(),
  }),
  'command.unverified_summary': event('the commands no key vouched for in the last minute: counted, not run', {
    since: z.string(),
    until: z.string(),
    total: z.number().int(),
    byCommand: z.record(z.string(), z.record(z.string(), z.number().int())).describe('command → outcome code → count'),
  }),
  'receipt.queued': event('a fiscal receipt is owed for a sale or its return', {
    orderId,
    reference: z.string(),
    kind: receiptKind,
    key: z.string().describe("the receipt's idempotency key at the register"),
  }),
  'receipt.issued': event('the register issued the receipt', {
    orderId,
    kind: receiptKind,
    key: z.string(),
    registerId: z.string(),
    how: z.string().describe('sent, looked up by key, …'),
  }),
  'receipt.resolved': event('a person settled an unknown receipt (vendgate receipt)', {
    orderId,
    kind: receiptKind,
    key: z.string(),
    issued: z.boolean(),
    by,
  }),
  'receipt.unknown': event('the register may have issued it: looked up by key (alarm receipt_unknown/<order>)', {
    orderId,
    kind: receiptKind,
    key: z.string(),
    detail,
  }),
  'receipt.rejected': event('the register refused the receipt; never retried (alarm receipt_rejected/<order>)', {
    orderId,
    kind: receiptKind,
    key: z.string(),
    code: z.string(),
    message: z.string(),
  }),
  'dex.read': event(
    'an EVA-DTS audit read (docs/dex.md)',
    {
      type: z.literal('dex.read'),
      kind: z.enum(['read', 'reset', 'visit']),
      read: z.number().int().describe("the read's sequence number"),
      at: z.string(),
      deviceId: z.string(),
      by,
      paid: z.object({ init: pair, reset: pair }),
      refundsAfterDelivery: z.object({ init: pair, reset: pair }),
      afterRestore: z.object({ lastRead: z.number().int(), paidCount: z.number().int(), paidValue: z.number().int() }).optional(),
      dex: z.string().describe('the DEX file itself'),
      resent: z
        .object({ at: z.string(), by })
        .optional()
        .describe('a read sent again on request (cmd/dex with `read`): when and for whom; it counts as no read'),
    },
    'dex',
  ),
  'service.visit': event('a service visit was recorded, with the audit read taken with it', {
    visit: z.number().int(),
    by,
    via: z.string().optional().describe('how it was recorded when not on site, e.g. `mqtt (key ops-1, request r-7)`'),
    fills: z.record(z.string(), z.number().int()).describe('slot → count'),
    read: z.number().int(),
    dex: z.string(),
  }),
};

export type EventType = keyof typeof EVENTS;
/** What a producer passes to `outbox.event(type, payload)` for each event name. */
export type EventPayloads = { [T in EventType]: z.input<(typeof EVENTS)[T]['schema']> };
export type EventPayload<T extends EventType> = EventPayloads[T];
/** The relative topic each event goes to (`events`, or `dex` for an audit read). */
export type EventTopic<T extends EventType> = (typeof EVENTS)[T]['topic'];

export { ALARM_PAYLOAD, type AlarmPayload } from './alarm-payload.js';
