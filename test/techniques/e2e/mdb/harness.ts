import Database from 'better-sqlite3';
import { startService, type Service } from '../../../helpers/service.js';
import { startVmcOnPty, type VmcOnPty } from '../../../fakes/mdb-vmc/pty.js';
import type { VmcOptions } from '../../../fakes/mdb-vmc/model.js';
import { waitFor } from '../../../helpers/wait.js';

/** The catalog the machine model sells from: whole tugrik. */
export const CATALOG = [
  { slot: '12', name: 'Chips', price: 2800 },
  { slot: '13', name: 'Water', price: 3500 },
];

export interface OrderRow {
  id: number;
  source: string;
  slot: string | null;
  amount: number;
  state: string;
  invoice_id: string | null;
  expires_at: number | null;
  created_at: number;
}

export interface MdbStack {
  svc: Service;
  pty: VmcOnPty;
  orders(): OrderRow[];
  alarms(): { name: string; message: string }[];
  refunds(): { order_id: number; amount: number; state: string }[];
  /** The customer pays the order's invoice at the sandbox. */
  pay(order: OrderRow): Promise<void>;
  /** The suite's waitFor (test/helpers/wait.ts), whose failure also says what the board heard and said. */
  waitFor: typeof waitFor;
  stop(): Promise<void>;
}

/** The real service (dist/main.js) with the MDB profile on one end of a pty pair and the VMC model on the other. */
export async function mdbStack(
  opts: {
    vmc?: Partial<VmcOptions>;
    mdb?: Record<string, unknown>;
    config?: Record<string, unknown>;
    serial?: Record<string, unknown>;
  } = {},
): Promise<MdbStack> {
  const pty = await startVmcOnPty(opts.vmc);
  let svc: Service;
  try {
    svc = await startService({
      // Several services start and stop per file: a loaded machine may take longer than the default.
      readyTimeoutMs: 60_000,
      config: {
        device: { currency: 'MNT', catalog: CATALOG },
        actuator: {
          kind: 'serial',
          serial: {
            path: pty.gatewayPath,
            baudRate: 115_200,
            profile: 'mdb',
            timeoutMs: 5_000,
            reconnectMaxMs: 300,
            mdb: opts.mdb ?? {},
            ...opts.serial,
          },
        },
        ...opts.config,
      },
    });
  } catch (err) {
    await pty.stop();
    throw err;
  }
  const read = <T>(sql: string): T[] => {
    const db = new Database(svc.dbPath, { readonly: true, fileMustExist: true });
    try {
      return db.prepare(sql).all() as T[];
    } finally {
      db.close();
    }
  };
  return {
    svc,
    pty,
    orders: () => read<OrderRow>('SELECT id, source, slot, amount, state, invoice_id, expires_at, created_at FROM orders ORDER BY id'),
    alarms: () => read<{ name: string; message: string }>('SELECT name, message FROM alarms ORDER BY name'),
    refunds: () =>
      read<{ order_id: number; amount: number; state: string }>('SELECT order_id, amount, state FROM refunds ORDER BY order_id'),
    async pay(order) {
      const res = await fetch(`${svc.localUrl}/sandbox/pay/${order.invoice_id}`, { method: 'POST' });
      if (res.status !== 204) throw new Error(`pay ${order.invoice_id}: ${res.status} ${await res.text()}`);
    },
    waitFor: (predicate, options) =>
      waitFor(predicate, options).catch((err: Error) => {
        // What the board heard and said, to read a failure without a rerun.
        throw new Error(`${err.message}\nboard heard: ${pty.vmc.received.join(' | ')}\nboard said: ${pty.vmc.said.join(' | ')}`);
      }),
    async stop() {
      await svc.stop();
      await pty.stop();
    },
  };
}
