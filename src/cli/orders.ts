import { loadSettings } from '../settings/index.js';
import { openDatabase } from '../store/index.js';
import { createOrderRepository, ORDER_STATES, orderView } from '../orders/index.js';
import { createOutbox } from '../outbox/index.js';
import { createSettlement } from '../vend/index.js';
import { receiptBookFor } from '../fiscal/index.js';
import { systemClock, toIso } from '../util/clock.js';
import { inTransaction } from '../store/index.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';

function openFor(config: string | undefined, io: CliIo) {
  const { settings } = loadSettings({ path: config, env: io.env });
  return { settings, db: openDatabase(settings.storage.path) };
}

/** `vendgate orders [--state S] [--json]`: the newest orders first. */
export function ordersCommand(options: { config?: string; state?: string; json?: boolean; limit?: string }, io: CliIo): number {
  if (options.state && !ORDER_STATES.includes(options.state as never)) {
    throw new UsageError(`unknown state "${options.state}"; one of: ${ORDER_STATES.join(', ')}`);
  }
  const { db } = openFor(options.config, io);
  try {
    const repo = createOrderRepository({ db, clock: systemClock });
    const rows = repo.list({ state: options.state, limit: options.limit ? Number(options.limit) : 50 });
    if (options.json) {
      print(
        io.stdout,
        JSON.stringify(
          rows.map((r) => orderView(r, repo.history(r.id))),
          null,
          2,
        ),
      );
      return EXIT.OK;
    }
    const header = ['id', 'reference', 'state', 'slot', 'amount', 'invoice', 'created'];
    const table = rows.map((r) => [
      String(r.id),
      r.reference,
      r.state,
      r.slot ?? '-',
      `${r.amount} ${r.currency}`,
      r.invoice_id ?? '-',
      toIso(r.created_at)!,
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    for (const row of [header, ...table]) print(io.stdout, row.map((cell, i) => cell.padEnd(widths[i]!)).join('  '));
    if (rows.length === 0) print(io.stdout, options.state ? `no orders in state ${options.state}` : 'no orders yet');
    return EXIT.OK;
  } finally {
    db.close();
  }
}

/** `vendgate resolve ORDER --vended|--not-vended`: a person settles an uncertain vend. */
export function resolveCommand(options: { config?: string; order?: string; vended?: boolean; notVended?: boolean }, io: CliIo): number {
  const orderId = Number(options.order);
  if (!Number.isInteger(orderId) || orderId <= 0)
    throw new UsageError('usage: vendgate resolve ORDER --vended|--not-vended (ORDER is the numeric order id from `vendgate orders`)');
  if (options.vended === options.notVended)
    throw new UsageError('say exactly one of --vended (the customer got the goods) or --not-vended (refund the customer)');
  const { settings, db } = openFor(options.config, io);
  try {
    const outbox = createOutbox({ db, clock: systemClock, deviceId: settings.device.id });
    // A vend resolved as delivered owes its receipt: the row is written here, the service sends it.
    const receipts = receiptBookFor({ db, clock: systemClock, outbox }, settings.fiscal);
    const settlement = createSettlement({
      db,
      clock: systemClock,
      outbox,
      orderRepository: createOrderRepository({ db, clock: systemClock }),
      ...(receipts ? { receipts } : {}),
    });
    const order = settlement.resolve(orderId, Boolean(options.vended), 'cli');
    print(
      io.stdout,
      options.vended
        ? `order ${order.reference} resolved as vended; the alarm is cleared`
        : `order ${order.reference} resolved as not vended; the refund is queued and the running service sends it`,
    );
    return EXIT.OK;
  } finally {
    db.close();
  }
}

/**
 * `vendgate receipt ORDER --issued --register-id ID --register-date DATE | --not-issued [--return]`:
 * a person settles a receipt the gateway cannot (eBarimt's PosAPI cannot be asked whether it holds a
 * receipt, so a lost answer stays unknown; a receipt the register refused was issued by hand). They
 * looked in the register: `--issued` records the receipt it holds (its id and date, which a later
 * return names); `--not-issued` queues it again under the same key (the running service sends it).
 * Only a receipt whose outcome is unknown or that was refused can be settled; its alarm is cleared.
 */
export function receiptCommand(
  options: {
    config?: string;
    order?: string;
    issued?: boolean;
    notIssued?: boolean;
    registerId?: string;
    registerDate?: string;
    return?: boolean;
  },
  io: CliIo,
): number {
  const orderId = Number(options.order);
  const usage = 'usage: vendgate receipt ORDER --issued --register-id ID --register-date DATE | --not-issued [--return]';
  if (!Number.isInteger(orderId) || orderId <= 0) throw new UsageError(`${usage} (ORDER is the numeric order id from \`vendgate orders\`)`);
  if (Boolean(options.issued) === Boolean(options.notIssued))
    throw new UsageError('say exactly one of --issued (the register holds the receipt) or --not-issued (it does not: send it again)');
  const held = options.issued ? { registerId: options.registerId, registerDate: options.registerDate } : null;
  if (held && (!held.registerId || !held.registerDate))
    throw new UsageError(
      '--issued needs the receipt as the register shows it: --register-id ID --register-date DATE (a later return names them)',
    );
  if (options.notIssued && (options.registerId || options.registerDate))
    throw new UsageError('--register-id and --register-date go with --issued');
  const { settings, db } = openFor(options.config, io);
  try {
    const outbox = createOutbox({ db, clock: systemClock, deviceId: settings.device.id });
    const book = receiptBookFor({ db, clock: systemClock, outbox }, settings.fiscal);
    if (!book) throw new UsageError('fiscal.register is none: this device issues no receipts');
    const kind = options.return ? 'return' : 'sale';
    const row = kind === 'sale' ? book.saleOf(orderId) : book.returnOf(orderId);
    if (!row) throw new UsageError(`order ${orderId} has no ${kind} receipt`);
    if (row.state !== 'unknown' && row.state !== 'rejected') {
      throw new UsageError(
        `the ${kind} receipt of order ${orderId} is ${row.state}: only an unknown or refused one is settled by a person`,
      );
    }
    const now = systemClock.now();
    const moved = inTransaction(db, () => {
      const ok = book.move(
        row.id,
        ['unknown', 'rejected'],
        held
          ? {
              state: 'issued',
              register_id: held.registerId ?? null,
              register_date: held.registerDate ?? null,
              issued_at: now,
              last_error: 'settled by a person: issued',
            }
          : { state: 'queued', next_at: 0, alarmed_at: null, last_error: 'settled by a person: not issued, sent again' },
      );
      if (!ok) return false;
      // A sale refused (or unknown) when its order's refund completed got no return then
      // (ReceiptBook.refunded skips a rejected sale): now that it holds, or will hold, a receipt, it owes one.
      if (kind === 'sale' && createOrderRepository({ db, clock: systemClock }).get(orderId)?.state === 'refunded') book.refunded(orderId);
      outbox.clearAlarm(`receipt_unknown/${orderId}`);
      outbox.clearAlarm(`receipt_rejected/${orderId}`);
      outbox.event('receipt.resolved', { orderId, kind, key: row.key, issued: Boolean(options.issued), by: 'cli' });
      return true;
    });
    if (!moved) throw new UsageError(`the ${kind} receipt of order ${orderId} changed meanwhile: run the command again`);
    print(
      io.stdout,
      options.issued
        ? `the ${kind} receipt of order ${orderId} (${row.key}) is recorded as issued (${options.registerId}); the alarm is cleared`
        : `the ${kind} receipt of order ${orderId} (${row.key}) is queued again under the same key; the running service sends it`,
    );
    return EXIT.OK;
  } finally {
    db.close();
  }
}
