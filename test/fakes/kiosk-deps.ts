import type { CreatedOrder, DeviceState, KioskDeps, OrderView, SandboxPayments } from '../../src/kiosk/index.js';
import { createManualClock, ErrorCodes, silentLogger, toIso, VendgateError, type Clock, type Logger } from '../../src/util/index.js';

export interface FakeInvoice {
  id: string;
  amount: number;
  currency: string;
  reference: string;
  status: string;
  expiresAt: number;
}

/**
 * A KioskDeps that records what the kiosk asked for and lets a test move the device state.
 * The order service is a tiny in-memory table: create → awaiting_payment, cancel → canceled.
 */
export interface FakeKioskDeps extends KioskDeps {
  logger: Logger;
  clock: Clock & { advance(ms: number): void; set(ms: number): void };
  calls: { create: { slot?: string; source: 'kiosk' }[]; cancel: number[]; pay: string[] };
  orderTable: Map<number, OrderView>;
  /** Replace to make create() fail or behave differently. */
  createImpl: (input: { slot?: string; source: 'kiosk' }) => Promise<CreatedOrder>;
  healthResult: ReturnType<KioskDeps['health']>;
  metricsText: string;
  current: DeviceState;
  /** Sandbox invoices by id (when created with `sandbox: true`). */
  invoices: Map<string, FakeInvoice>;
  listenerCount(): number;
  /** Changes the device state and notifies subscribers, as the order service does on every change. */
  setState(patch: Partial<DeviceState>): DeviceState;
}

export const FAKE_PAY_BASE = 'http://127.0.0.1:8080/sandbox/pay/';

export function createFakeKioskDeps(
  options: {
    mode?: 'vending' | 'turnstile';
    catalog?: DeviceState['catalog'];
    sandbox?: boolean;
  } = {},
): FakeKioskDeps {
  const clock = createManualClock();
  const listeners = new Set<(state: DeviceState) => void>();
  const mode = options.mode ?? 'vending';
  const catalog = options.catalog ?? [
    { slot: 'A1', name: 'Water 0.5 l', price: 2500 },
    { slot: 'A2', name: 'Coffee', price: 4000 },
  ];
  let nextId = 1;
  const invoices = new Map<string, FakeInvoice>();

  const deps: FakeKioskDeps = {
    logger: silentLogger(),
    clock,
    calls: { create: [], cancel: [], pay: [] },
    orderTable: new Map(),
    invoices,
    healthResult: { ok: true, checks: { database: { ok: true, detail: 'ok' } } },
    metricsText: '# TYPE vendgate_orders_total counter\nvendgate_orders_total 3\n',
    current: {
      deviceId: 'vm-test-1',
      mode,
      phase: 'idle',
      reason: null,
      currency: 'MNT',
      language: 'en',
      provider: 'sandbox',
      supportContact: null,
      paymentApps: null,
      catalog: mode === 'vending' ? catalog.map((item) => ({ ...item, available: true, unavailable: null })) : [],
      catalogVersion: 'settings',
      fare: mode === 'turnstile' ? 1500 : null,
      autoStart: false,
      selection: 'kiosk',
      resultScreenSec: 6,
      order: null,
      receipt: null,
      since: toIso(clock.now())!,
      now: toIso(clock.now())!,
    },
    createImpl: async (input) => {
      const orderId = nextId++;
      const item = catalog.find((entry) => entry.slot === input.slot);
      const invoiceId = `sb_${orderId}`;
      const expiresAt = clock.now() + 120_000;
      const order: OrderView = {
        orderId,
        reference: `vm-test-1-${orderId}`,
        state: 'awaiting_payment',
        source: 'kiosk',
        slot: input.slot ?? null,
        itemName: item?.name ?? 'Pass',
        amount: item?.price ?? 1500,
        currency: 'MNT',
        provider: 'sandbox',
        invoiceId,
        payUrl: `${FAKE_PAY_BASE}${invoiceId}`,
        expiresAt: toIso(expiresAt),
        createdAt: toIso(clock.now())!,
        paidAt: null,
        vendedAt: null,
        refundedAt: null,
        errorCode: null,
        history: [{ at: toIso(clock.now())!, from: null, to: 'awaiting_payment', reason: 'created' }],
      };
      deps.orderTable.set(orderId, order);
      invoices.set(invoiceId, {
        id: invoiceId,
        amount: order.amount,
        currency: 'MNT',
        reference: order.reference,
        status: 'pending',
        expiresAt,
      });
      return { orderId, reference: order.reference, state: order.state, invoiceId, payUrl: order.payUrl, expiresAt: order.expiresAt };
    },
    orders: {
      create: async (input) => {
        deps.calls.create.push(input);
        return deps.createImpl(input);
      },
      get: (orderId) => deps.orderTable.get(orderId) ?? null,
      cancel: async (orderId) => {
        deps.calls.cancel.push(orderId);
        const order = deps.orderTable.get(orderId);
        if (!order) {
          throw new VendgateError(ErrorCodes.ORDER_NOT_FOUND, `order ${orderId} does not exist`);
        }
        const canceled: OrderView = {
          ...order,
          state: 'canceled',
          history: [...order.history, { at: toIso(clock.now())!, from: order.state, to: 'canceled', reason: 'kiosk' }],
        };
        deps.orderTable.set(orderId, canceled);
        return canceled;
      },
    },
    state: () => ({ ...deps.current, now: toIso(clock.now())! }),
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    health: () => deps.healthResult,
    metrics: () => deps.metricsText,
    listenerCount: () => listeners.size,
    setState: (patch) => {
      deps.current = { ...deps.current, ...patch, since: toIso(clock.now())! };
      const state = deps.state();
      for (const listener of listeners) listener(state);
      return state;
    },
  };

  if (options.sandbox) {
    const sandbox: SandboxPayments = {
      describe: (invoiceId) => invoices.get(invoiceId) ?? null,
      pay: async (invoiceId) => {
        deps.calls.pay.push(invoiceId);
        const invoice = invoices.get(invoiceId);
        if (!invoice) throw new VendgateError(ErrorCodes.ORDER_NOT_FOUND, `invoice ${invoiceId} does not exist`);
        if (invoice.status !== 'pending') throw new VendgateError(ErrorCodes.ORDER_STATE, `invoice ${invoiceId} is ${invoice.status}`);
        invoice.status = 'paid';
      },
    };
    deps.sandbox = sandbox;
  }
  return deps;
}
