import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, durably, inTransaction } from '../../dist/store/index.js';
import { percentiles, row } from './lib.mjs';

/**
 * What synchronous=FULL costs on the vend claim: the same claim transaction (job queued → firing,
 * order paid → vending, one outbox row) committed with `durably()` (FULL: fsync before the relay
 * moves) and with the database's default NORMAL, alternated on the same file.
 */
export async function durabilityBench({ quick }) {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-bench-'));
  const db = openDatabase(join(dir, 'vendgate.db'));
  try {
    const n = quick ? 200 : 1_000;
    const now = Date.now();
    db.transaction(() => {
      const order =
        db.prepare(`INSERT INTO orders (reference, attempt, idempotency_key, source, slot, item_name, amount, currency, livemode, provider,
        capture_mode, state, invoice_id, created_at, updated_at) VALUES (?, 1, ?, 'kiosk', 'A1', 'Water', 1500, 'MNT', 0, 'sandbox', 'automatic', 'paid', ?, ?, ?)`);
      const job = db.prepare("INSERT INTO vend_jobs (order_id, state, slot, created_at) VALUES (?, 'queued', 'A1', ?)");
      for (let i = 1; i <= 2 * n; i += 1) {
        order.run(`r-${i}`, `r-${i}-pay`, `inv-${i}`, now, now);
        job.run(i, now);
      }
    })();
    const claimJob = db.prepare("UPDATE vend_jobs SET state = 'firing', claimed_at = ? WHERE order_id = ? AND state = 'queued'");
    const claimOrder = db.prepare("UPDATE orders SET state = 'vending', updated_at = ? WHERE id = ? AND state = 'paid'");
    const history = db.prepare(
      "INSERT INTO order_history (order_id, at, from_state, to_state, reason) VALUES (?, ?, 'paid', 'vending', 'vend claimed')",
    );
    const outbox = db.prepare("INSERT INTO outbox (id, kind, topic, payload, retain, created_at) VALUES (?, 'event', 'events', ?, 0, ?)");
    const claim = (id) => () => {
      claimJob.run(Date.now(), id);
      claimOrder.run(Date.now(), id);
      history.run(id, Date.now());
      outbox.run(`e-${id}`, JSON.stringify({ type: 'vend.started', orderId: id }), Date.now());
    };
    const full = [];
    const normal = [];
    for (let i = 1; i <= 2 * n; i += 1) {
      const t = process.hrtime.bigint();
      if (i % 2 === 0) durably(db, claim(i));
      else inTransaction(db, claim(i));
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      (i % 2 === 0 ? full : normal).push(ms);
    }
    const f = percentiles(full);
    const nn = percentiles(normal);
    return {
      name: 'durability',
      settings: { claims: n, journal: 'WAL', dir: tmpdir() },
      results: { full: f, normal: nn, ratioP50: f.p50 / nn.p50 },
      rows: [
        row(
          'vend claim commit, synchronous=FULL (durably) p50 / p99',
          `${f.p50} / ${f.p99} ms`,
          'informational: the price of invariant 6',
          null,
        ),
        row(
          'vend claim commit, synchronous=NORMAL p50 / p99 (baseline)',
          `${nn.p50} / ${nn.p99} ms (FULL = ${(f.p50 / nn.p50).toFixed(1)}× at p50)`,
          'informational',
          null,
        ),
      ],
    };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
