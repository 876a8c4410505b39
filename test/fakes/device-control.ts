import type {
  CommandAudit,
  CommandResults,
  DeviceControl,
  DeviceStateSummary,
  DeviceTelemetry,
  UnverifiedSummary,
} from '../../src/mqtt/index.js';
import { ErrorCodes, VendgateError } from '../../src/util/index.js';

/**
 * A DeviceControl that records what MQTT asked of it. Orders in `vendUncertain` can be resolved,
 * orders in `paid` refunded; anything else fails the way the app does (VendgateError with a code).
 */
export interface FakeDeviceControl extends DeviceControl {
  calls: {
    outOfService: { on: boolean; reason: string }[];
    resolve: { orderId: number; vended: boolean }[];
    refund: number[];
    testVend: (string | null)[];
    selftest: number;
    audit: CommandAudit[];
    /** Summaries of the messages no key vouched for (counted, not audited one by one). */
    unverified: UnverifiedSummary[];
  };
  vendUncertain: Set<number>;
  paid: Set<number>;
  /** The database the fake runs: an order reference of another one is refused (`fakeOrderReference`). */
  dbId: string;
  /** The fields the fake reports; the others are left to the MQTT side's own readings. */
  telemetryValues: Partial<DeviceTelemetry>;
  selftestResult: { ok: boolean; report: unknown };
  /** Changes the state and notifies listeners, as the app does on every change. */
  setState(patch: Partial<DeviceStateSummary>): void;
  /** Notifies listeners without changing anything (the app notifies on every ledger record). */
  notify(): void;
}

/** The database id the fake runs unless a test sets another. */
export const FAKE_DB_ID = 'fakedb';

/** A global order reference of the fake's database (what signed refund and resolve commands name). */
export function fakeOrderReference(orderId: number, dbId = FAKE_DB_ID): string {
  return `fake-device-${dbId}-${orderId}-0badf00d`;
}

/** An order as the real controls answer it (command-results.ts); only its number and state mean anything here. */
function orderAnswer(orderId: number, state: CommandResults['resolve']['state']): CommandResults['resolve'] {
  return {
    orderId,
    reference: fakeOrderReference(orderId),
    state,
    source: 'kiosk',
    slot: null,
    itemName: 'Water',
    amount: 100,
    currency: 'MNT',
    provider: 'sandbox',
    invoiceId: null,
    payUrl: null,
    appLinks: [],
    expiresAt: null,
    createdAt: '2026-11-29T12:00:00.000Z',
    paidAt: null,
    vendedAt: null,
    refundedAt: null,
    errorCode: null,
    history: [],
  };
}

export function createFakeDeviceControl(initial: Partial<DeviceStateSummary> = {}): FakeDeviceControl {
  let current: DeviceStateSummary = {
    mode: 'vending',
    phase: 'idle',
    orderId: null,
    reference: null,
    since: '2026-11-29T12:00:00.000Z',
    ...initial,
  };
  const listeners: (() => void)[] = [];
  const fake: FakeDeviceControl = {
    calls: { outOfService: [], resolve: [], refund: [], testVend: [], selftest: 0, audit: [], unverified: [] },
    vendUncertain: new Set(),
    paid: new Set(),
    dbId: FAKE_DB_ID,
    orderByReference(reference) {
      const [nonce = '', orderId = '', dbId = ''] = reference.split('-').reverse();
      if (!/^[0-9a-f]{8}$/.test(nonce) || !/^[0-9]+$/.test(orderId))
        return { code: ErrorCodes.BAD_REQUEST, message: `order: "${reference}" is not an order reference` };
      if (dbId !== fake.dbId)
        return { code: ErrorCodes.COMMAND_OTHER_DATABASE, message: `order ${reference} belongs to database "${dbId}"` };
      return { orderId: Number(orderId) };
    },
    telemetryValues: { uptimeSec: 42, counters: { orders_created: 3 }, lastPollAt: null },
    selftestResult: { ok: true, report: { checks: [{ name: 'database', ok: true }] } },
    state: () => ({ ...current }),
    setOutOfService(on, reason) {
      fake.calls.outOfService.push({ on, reason });
      fake.setState(on ? { phase: 'out_of_service', reason } : { phase: 'idle', reason: null });
    },
    async resolve(orderId, vended) {
      fake.calls.resolve.push({ orderId, vended });
      if (!fake.vendUncertain.has(orderId)) {
        throw new VendgateError(ErrorCodes.ORDER_STATE, `order ${orderId} is not vend_uncertain`);
      }
      fake.vendUncertain.delete(orderId);
      return orderAnswer(orderId, vended ? 'vended' : 'refunding');
    },
    async refund(orderId) {
      fake.calls.refund.push(orderId);
      if (!fake.paid.has(orderId)) throw new VendgateError(ErrorCodes.ORDER_NOT_FOUND, `no paid order ${orderId}`);
      return orderAnswer(orderId, 'refunding');
    },
    async testVend(slot) {
      fake.calls.testVend.push(slot);
      // The real answer is the actuator's outcome; the fake also says which slot it was asked for.
      const outcome = { result: 'vended' as const, slot };
      return outcome;
    },
    async runSelftest() {
      fake.calls.selftest += 1;
      return fake.selftestResult;
    },
    telemetry: () => ({ ...fake.telemetryValues }) as DeviceTelemetry,
    audit(entry) {
      fake.calls.audit.push(entry);
    },
    auditUnverified(summary) {
      fake.calls.unverified.push(summary);
    },
    onStateChange(listener) {
      listeners.push(listener);
    },
    setState(patch) {
      current = { ...current, ...patch };
      fake.notify();
    },
    notify() {
      for (const listener of listeners) listener();
    },
  };
  return fake;
}
