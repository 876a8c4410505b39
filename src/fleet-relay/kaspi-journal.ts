/**
 * The Kaspi caller's journal: a small SQLite file on the operator's server. Every create and every
 * return is written here BEFORE Kaspi is called, so that none is ever sent twice:
 *
 * - creates by (device, ExternalId): `sending` → `created` (with Kaspi's QrPaymentId and QR),
 *   `refused`, or `in_doubt` (Kaspi's answer was lost: never sent again). A repeat of an ExternalId
 *   is answered from here; a `sending` row a crash left is `in_doubt` on the next start.
 * - which device made each QrPaymentId: a device reads, cancels and returns only its own.
 * - returns by (device, return key): `sending` → `succeeded`, `failed` or `unknown` (never sent again).
 *
 * One relay process owns the file (SQLite's lock): run the Kaspi caller on one replica.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type CreateState = 'sending' | 'created' | 'refused' | 'in_doubt';
export type ReturnState = 'sending' | 'succeeded' | 'failed' | 'unknown';

export interface CreateRow {
  device_id: string;
  external_id: string;
  reference: string;
  amount: number;
  state: CreateState;
  qr_payment_id: string | null;
  qr_token: string | null;
  expires_at: number | null;
  poll_interval_sec: number | null;
  detail: string | null;
  created_at: number;
}

export interface ReturnRow {
  device_id: string;
  return_key: string;
  qr_payment_id: string;
  amount: number;
  state: ReturnState;
  return_operation_id: string | null;
  detail: string | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS kaspi_creates (
  device_id TEXT NOT NULL,
  external_id TEXT NOT NULL,
  reference TEXT NOT NULL,
  amount INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('sending', 'created', 'refused', 'in_doubt')),
  qr_payment_id TEXT UNIQUE,
  qr_token TEXT,
  expires_at INTEGER,
  poll_interval_sec REAL,
  detail TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (device_id, external_id)
);
CREATE TABLE IF NOT EXISTS kaspi_returns (
  device_id TEXT NOT NULL,
  return_key TEXT NOT NULL,
  qr_payment_id TEXT NOT NULL,
  amount INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('sending', 'succeeded', 'failed', 'unknown')),
  return_operation_id TEXT,
  detail TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (device_id, return_key)
);
`;

export function openKaspiJournal(path: string, now: () => number) {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  // Every answer to a device follows a durable row: FULL survives a power cut of the relay's host.
  db.pragma('synchronous = FULL');
  db.exec(SCHEMA);
  // A row a crash left `sending` may have reached Kaspi: in doubt, never sent again.
  const recovered = {
    creates: db
      .prepare(
        "UPDATE kaspi_creates SET state = 'in_doubt', detail = 'relay stopped while sending', updated_at = ? WHERE state = 'sending'",
      )
      .run(now()).changes,
    returns: db
      .prepare("UPDATE kaspi_returns SET state = 'unknown', detail = 'relay stopped while sending', updated_at = ? WHERE state = 'sending'")
      .run(now()).changes,
  };

  const getCreate = db.prepare('SELECT * FROM kaspi_creates WHERE device_id = ? AND external_id = ?');
  const insertCreate = db.prepare(
    "INSERT INTO kaspi_creates (device_id, external_id, reference, amount, state, created_at, updated_at) VALUES (?, ?, ?, ?, 'sending', ?, ?)",
  );
  const ownedBy = db.prepare("SELECT * FROM kaspi_creates WHERE qr_payment_id = ? AND device_id = ? AND state = 'created'");
  const getReturn = db.prepare('SELECT * FROM kaspi_returns WHERE device_id = ? AND return_key = ?');
  const insertReturn = db.prepare(
    "INSERT INTO kaspi_returns (device_id, return_key, qr_payment_id, amount, state, created_at, updated_at) VALUES (?, ?, ?, ?, 'sending', ?, ?)",
  );

  return {
    recovered,
    /** The row of this ExternalId, or, when none, a new `sending` row (then `fresh` is true). */
    claimCreate(deviceId: string, externalId: string, reference: string, amount: number): { row: CreateRow; fresh: boolean } {
      return db.transaction(() => {
        const existing = getCreate.get(deviceId, externalId) as CreateRow | undefined;
        if (existing) return { row: existing, fresh: false };
        insertCreate.run(deviceId, externalId, reference, amount, now(), now());
        return { row: getCreate.get(deviceId, externalId) as CreateRow, fresh: true };
      })();
    },
    created(
      deviceId: string,
      externalId: string,
      qr: { qrPaymentId: string; qrToken: string; expiresAt: number; pollIntervalSec: number | null },
    ): void {
      db.prepare(
        "UPDATE kaspi_creates SET state = 'created', qr_payment_id = ?, qr_token = ?, expires_at = ?, poll_interval_sec = ?, updated_at = ? WHERE device_id = ? AND external_id = ?",
      ).run(qr.qrPaymentId, qr.qrToken, qr.expiresAt, qr.pollIntervalSec, now(), deviceId, externalId);
    },
    settleCreate(deviceId: string, externalId: string, state: 'refused' | 'in_doubt', detail: string): void {
      db.prepare('UPDATE kaspi_creates SET state = ?, detail = ?, updated_at = ? WHERE device_id = ? AND external_id = ?').run(
        state,
        detail,
        now(),
        deviceId,
        externalId,
      );
    },
    /** Kaspi was never reached (or refused it before taking it: 429): as if never asked. */
    forgetCreate(deviceId: string, externalId: string): void {
      db.prepare("DELETE FROM kaspi_creates WHERE device_id = ? AND external_id = ? AND state = 'sending'").run(deviceId, externalId);
    },
    /** The device's own created QR of this id, or undefined (another device's, or none). */
    owned: (qrPaymentId: string, deviceId: string) => ownedBy.get(qrPaymentId, deviceId) as CreateRow | undefined,
    claimReturn(deviceId: string, returnKey: string, qrPaymentId: string, amount: number): { row: ReturnRow; fresh: boolean } {
      return db.transaction(() => {
        const existing = getReturn.get(deviceId, returnKey) as ReturnRow | undefined;
        if (existing) return { row: existing, fresh: false };
        insertReturn.run(deviceId, returnKey, qrPaymentId, amount, now(), now());
        return { row: getReturn.get(deviceId, returnKey) as ReturnRow, fresh: true };
      })();
    },
    settleReturn(
      deviceId: string,
      returnKey: string,
      state: Exclude<ReturnState, 'sending'>,
      detail: string | null,
      operationId?: string,
    ): void {
      db.prepare(
        'UPDATE kaspi_returns SET state = ?, detail = ?, return_operation_id = ?, updated_at = ? WHERE device_id = ? AND return_key = ?',
      ).run(state, detail, operationId ?? null, now(), deviceId, returnKey);
    },
    forgetReturn(deviceId: string, returnKey: string): void {
      db.prepare("DELETE FROM kaspi_returns WHERE device_id = ? AND return_key = ? AND state = 'sending'").run(deviceId, returnKey);
    },
    /** Creates per state, for the stats line and the metrics. */
    counts(): Record<string, number> {
      const rows = db.prepare('SELECT state, count(*) AS n FROM kaspi_creates GROUP BY state').all() as { state: string; n: number }[];
      return Object.fromEntries(rows.map((r) => [r.state, r.n]));
    },
    close: () => db.close(),
  };
}

export type KaspiJournal = ReturnType<typeof openKaspiJournal>;
