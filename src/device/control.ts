import type { DeviceControl } from '../mqtt/index.js';
import type { Settings } from '../settings/index.js';
import type { Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Outbox } from '../outbox/index.js';
import type { OrderService } from '../orders/index.js';
import type { VendRunner, RefundWorker } from '../vend/index.js';
import type { CaseSettlement } from '../ledger/index.js';
import { itemForSlot, type Catalog } from '../catalog/index.js';
import type { DexAudit, Visits } from '../dex/index.js';
import type { LiveComponents } from '../selftest/index.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { databaseId, inTransaction } from '../store/index.js';
import { HOLDS_THE_MACHINE_STATES, orderView, parseReference } from '../orders/index.js';
import type { Availability } from './availability.js';
import type { DeviceView } from './view.js';
import type { StateChanges } from './state-changes.js';

/** Exactly what the operator's controls use. */
export interface DeviceControlDeps {
  device: Pick<Readonly<Settings>['device'], 'mode' | 'currency' | 'fare'>;
  db: Db;
  logger: Logger;
  outbox: Pick<Outbox, 'event'>;
  availability: Pick<Availability, 'set' | 'clear'>;
  orders: Pick<OrderService, 'get' | 'history' | 'inStates' | 'note'>;
  /** Settlement by a person, and the test actuation (vend/ owns every touch of the machine). */
  vend: Pick<VendRunner, 'resolve' | 'refund' | 'testFire'>;
  refunds: Pick<RefundWorker, 'run'>;
  /** A person's settlement of a parked case (ledger/settle.ts), the same as `vendgate settle`. */
  cases: Pick<CaseSettlement, 'settle'>;
  catalog: Pick<Catalog, 'current' | 'apply' | 'rollback'> & { slots: Pick<Catalog['slots'], 'refill' | 'clearJam'> };
  view: Pick<DeviceView, 'state' | 'telemetry'>;
  changes: Pick<StateChanges, 'subscribe'>;
  /** The audit and the visits (src/dex/, the same code as `vendgate dex`/`visit`); absent: no `cmd/dex`/`cmd/visit`. */
  dex?: { audit: DexAudit; visits: Visits };
  /** After a catalog change: the screen and MQTT follow. */
  notify: () => void;
  /** The in-process selftest: the running service's own components, never a second set. */
  selftest: {
    settings: Readonly<Settings>;
    clock: Clock;
    live: LiveComponents;
    /** Where the running service listens. */
    urls: () => { local?: string; webhook?: string };
    source: string;
    environment: string[];
  };
}

/**
 * What operators may do to the device remotely (MQTT commands). Every money decision goes through
 * the same settlement code as the CLI; a test vend moves no money, goes through vend/ like any
 * actuation, and is refused while an order is in progress.
 */
export function createDeviceControl(deps: DeviceControlDeps): DeviceControl {
  const { orders, vend, refunds, catalog, notify } = deps;
  const view = (orderId: number) => orderView(orders.get(orderId)!, orders.history(orderId));
  /** The refund is sent now rather than at the next tick; a pass that fails is tried again at that tick. */
  const runRefunds = () => {
    refunds
      .run()
      .catch((err: unknown) => deps.logger.child({ module: 'control' }).warn({ err }, 'refund pass failed; tried again at the next tick'));
  };
  const changed = <T>(result: T): T => {
    notify();
    return result;
  };

  return {
    state() {
      const state = deps.view.state();
      return {
        mode: state.mode,
        phase: state.phase,
        orderId: state.order?.orderId ?? null,
        reference: state.order?.reference ?? null,
        since: state.since,
        reason: state.reason,
      };
    },
    setOutOfService(on, reason, by) {
      inTransaction(deps.db, () => deps.outbox.event('device.out_of_service', { on, reason: reason || null, by }));
      // The screen and MQTT follow through availability's subscribers.
      if (on) deps.availability.set('operator', reason || undefined);
      else deps.availability.clear('operator');
    },
    orderByReference(reference) {
      const parsed = parseReference(reference);
      if (!parsed)
        return { code: ErrorCodes.BAD_REQUEST, message: `order: "${reference}" is not an order reference (<device>-<db>-<order>-<nonce>)` };
      const dbId = databaseId(deps.db);
      if (parsed.dbId !== dbId)
        return {
          code: ErrorCodes.COMMAND_OTHER_DATABASE,
          message: `order ${reference} belongs to database "${parsed.dbId}"; this device runs database "${dbId}" (restored or replaced since)`,
        };
      const row = deps.db.prepare('SELECT id FROM orders WHERE reference = ?').get(reference) as { id: number } | undefined;
      if (!row) return { code: ErrorCodes.ORDER_NOT_FOUND, message: `no order of this database has the reference ${reference}` };
      return { orderId: row.id };
    },
    async resolve(orderId, vended, by) {
      vend.resolve(orderId, vended, by);
      runRefunds();
      return view(orderId);
    },
    async refund(orderId, by) {
      vend.refund(orderId, by);
      runRefunds();
      return view(orderId);
    },
    async settle(caseName, outcome, by) {
      return deps.cases.settle(caseName, outcome, by);
    },
    async testVend(slot, by) {
      const { device } = deps;
      if (orders.inStates(HOLDS_THE_MACHINE_STATES).length > 0) {
        throw new VendgateError(ErrorCodes.DEVICE_BUSY, 'an order is in progress; try the test vend when the machine is idle');
      }
      const item = device.mode === 'vending' ? itemForSlot(catalog.current().items, slot ?? undefined) : null;
      deps.logger.child({ module: 'control' }).warn({ slot, by }, 'remote test vend (no money)');
      return vend.testFire({
        orderId: 0,
        reference: 'test-vend',
        slot: item?.slot ?? null,
        amount: item?.price ?? device.fare ?? 0,
        currency: device.currency,
        mode: device.mode,
      });
    },
    async runSelftest() {
      const { settings, clock, live, urls, source, environment } = deps.selftest;
      // Loaded when a selftest is asked for (the MQTT command), not with every start: the checks are ~37 KB of bundle.
      const { runSelftest, sharedReport } = await import('../selftest/index.js');
      const run = await runSelftest({ settings, source, environment, urls: urls(), store: true }, { clock, logger: deps.logger, live });
      // The answer goes onto shared topics: without the device's paths, ports and URLs (stored in full).
      return { ok: run.report.ok, report: sharedReport(run.report) };
    },
    telemetry() {
      const telemetry = deps.view.telemetry();
      // What to bring at the next visit, the same rows as `vendgate picklist`.
      return deps.dex ? { ...telemetry, picklist: deps.dex.visits.picklist() } : telemetry;
    },
    onStateChange(listener) {
      deps.changes.subscribe(listener);
    },
    auditUnverified(summary) {
      inTransaction(deps.db, () => deps.outbox.event('command.unverified_summary', { ...summary }));
    },
    audit(entry) {
      inTransaction(deps.db, () => {
        deps.outbox.event('command.handled', {
          command: entry.command,
          requestId: entry.requestId,
          keyId: entry.keyId,
          verified: entry.verified,
          ok: entry.ok,
          code: entry.code,
          ...(entry.replay ? { replay: true } : {}),
          ...(entry.orderId !== undefined ? { orderId: entry.orderId } : {}),
        });
        // Only a verified command writes into an order's history: anyone on the broker could
        // otherwise fill it with refusals.
        if (entry.verified && entry.orderId !== undefined) {
          const outcome = entry.replay ? 'replay refused, nothing done' : entry.ok ? 'done' : `refused (${entry.code ?? 'error'})`;
          orders.note(entry.orderId, `command ${entry.command} request ${entry.requestId ?? '?'} key ${entry.keyId ?? '?'}: ${outcome}`);
        }
      });
    },
    catalog: {
      apply: (document, by) => changed(catalog.apply(document, by)),
      rollback: (by) => changed(catalog.rollback(by)),
      refill: (slot, count, by) => changed(catalog.slots.refill(slot, count, by)),
      clearJam: (slot, by) => changed(catalog.slots.clearJam(slot, by)),
      slots: () => catalog.current().items.map((item) => item.slot),
    },
    ...(deps.dex ? { dex: dexControl(deps.dex, changed) } : {}),
  };
}

/** `cmd/dex`, `cmd/visit`: every read goes out on the `dex` topic through the outbox, published at once. */
function dexControl({ audit, visits }: { audit: DexAudit; visits: Visits }, changed: <T>(result: T) => T): DeviceControl['dex'] {
  const brief = (header: ReturnType<DexAudit['read']>['header']) => ({
    read: header.read,
    kind: header.kind,
    at: header.at,
    by: header.by,
    paid: header.paid,
    refundsAfterDelivery: header.refundsAfterDelivery,
    ...(header.afterRestore ? { afterRestore: header.afterRestore } : {}),
    topic: 'dex' as const,
  });
  return {
    read: (by) => changed(brief(audit.read('read', by).header)),
    resend: (read, by) => changed({ ...brief(audit.resend(read, by)), resent: true }),
    visit: (who, fills, by) => {
      const visit = visits.record(who, fills, by);
      return changed({ visit: visit.visit, at: visit.at, by: visit.by, fills: visit.fills, dex: brief(visit.read.header) });
    },
  };
}
