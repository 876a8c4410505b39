import { loadSettings } from '../settings/index.js';
import { openDatabase } from '../store/index.js';
import { createOrderRepository, ORDER_STATES, orderView } from '../orders/index.js';
import { createOutbox } from '../outbox/index.js';
import { createSettlement } from '../vend/index.js';
import { receiptBookFor } from '../fiscal/index.js';
import { systemClock, toIso } from '../util/clock.js';
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
