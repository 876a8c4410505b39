import { prepared, type Db } from '../store/index.js';

export type VendJobState = 'queued' | 'firing' | 'done' | 'failed' | 'uncertain' | 'resolved';

export interface VendJobRow {
  order_id: number;
  state: VendJobState;
  slot: string | null;
  created_at: number;
  claimed_at: number | null;
  finished_at: number | null;
  outcome: string | null;
  detail: string | null;
  capture_state: 'pending' | 'done' | 'failed' | null;
}

/** The SQL of `vend_jobs`. Callers own the transaction. */
export function createVendJobRepository(db: Db) {
  return {
    get(orderId: number): VendJobRow | undefined {
      return prepared(db, 'SELECT * FROM vend_jobs WHERE order_id = ?').get(orderId) as VendJobRow | undefined;
    },
    nextQueued(): VendJobRow | undefined {
      return prepared(db, "SELECT * FROM vend_jobs WHERE state = 'queued' ORDER BY created_at, order_id LIMIT 1").get() as VendJobRow | undefined;
    },
    inState(state: VendJobState): VendJobRow[] {
      return prepared(db, 'SELECT * FROM vend_jobs WHERE state = ? ORDER BY order_id').all(state) as VendJobRow[];
    },
    /** queued → firing. Returns false when another runner (or a restart) got there first. */
    claim(orderId: number, now: number): boolean {
      return prepared(db, "UPDATE vend_jobs SET state = 'firing', claimed_at = ? WHERE order_id = ? AND state = 'queued'").run(now, orderId).changes === 1;
    },
    finish(orderId: number, from: VendJobState, to: VendJobState, outcome: string, detail: string | null, now: number): boolean {
      return prepared(db, 'UPDATE vend_jobs SET state = ?, outcome = ?, detail = ?, finished_at = ? WHERE order_id = ? AND state = ?')
        .run(to, outcome, detail, now, orderId, from).changes === 1;
    },
    setCapture(orderId: number, state: VendJobRow['capture_state']): void {
      prepared(db, 'UPDATE vend_jobs SET capture_state = ? WHERE order_id = ?').run(state, orderId);
    },
    pendingCaptures(): VendJobRow[] {
      return prepared(db, "SELECT * FROM vend_jobs WHERE capture_state = 'pending' ORDER BY order_id").all() as VendJobRow[];
    },
  };
}

export type VendJobRepository = ReturnType<typeof createVendJobRepository>;
