import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Clock } from '../util/clock.js';
import type { FiscalRegister, IssuedReceipt, LookupOutcome, ReceiptRequest, RegisterOutcome, RegisterStatus } from './types.js';

/** The sandbox register's file: beside the database, as the sandbox provider's sandbox.db is. */
export function sandboxRegisterDbPath(databasePath: string): string {
  return databasePath === ':memory:' ? ':memory:' : join(dirname(databasePath), 'fiscal-sandbox.db');
}

export interface SandboxRegisterSettings {
  dbPath: string;
  /** Share of issue/return answers lost after the register committed: `unknown` though it holds the receipt. */
  lostAnswerRate?: number;
  /** Share of calls that time out before the register commits: `unknown`, and it holds nothing. */
  timeoutRate?: number;
  /** Receipts per second at most (0: no limit); beyond it the register answers `unavailable` with a retry time. */
  perSecond?: number;
  /** Lottery numbers it starts with (eBarimt-like); null: none (Kazakhstan-like). */
  lotteryStock?: number | null;
  /** Source of randomness for the fault rates (tests and the soak pass a seeded one). */
  random?: () => number;
}

/** What a test or the soak does to the sandbox register. */
export interface SandboxRegisterFaults {
  /** Unreachable until this time (ms since epoch on the register's clock); null: reachable. */
  outageUntil(ms: number | null): void;
  /** The next `n` issue/return calls commit and then lose their answer. */
  loseNextAnswers(n: number): void;
  /** The next `n` issue/return calls time out before the register commits. */
  timeOutNext(n: number): void;
  /** Replaces the fault rates. */
  rates(rates: { lostAnswerRate?: number; timeoutRate?: number }): void;
  /** Receipts per second at most from now on (0: no limit). */
  pace(perSecond: number): void;
  /** Works offline since this time (a Kazakh register that cannot reach its operator); null: online. */
  offlineSince(ms: number | null): void;
}

export interface SandboxRegisterRow {
  key: string;
  kind: 'sale' | 'return';
  order_id: string;
  register_id: string;
  register_date: string;
  total: number;
  returns_id: string | null;
  lottery: string | null;
  created_at: number;
}

/** A call that presented a key the register already held: answered with that receipt, none made. */
export interface SandboxRegisterRepeat {
  key: string;
  kind: 'sale' | 'return';
  order_id: string;
  at: number;
}

export interface SandboxRegister extends FiscalRegister {
  readonly faults: SandboxRegisterFaults;
  /** Every receipt the register holds, oldest first: the "tax office's" truth in tests and the soak. */
  held(): SandboxRegisterRow[];
  /**
   * Every issue/return call that presented a key the register already held, oldest first. The key
   * makes such a call harmless here, but a worker that sends one has re-sent without asking first,
   * which at a register that does not enforce the key (eBarimt) is a second receipt.
   */
  repeats(): SandboxRegisterRepeat[];
  close(): Promise<void>;
}

/**
 * The demo's fiscal register, in process: the documented rules in small. Idempotent by key (a
 * repeated key returns the receipt it made); a return of a receipt it does not hold, or of one
 * already returned, is refused; lottery numbers run out. Fault injection: answers lost after the
 * commit, timeouts before it, outages, a pace. Its state is a small SQLite file, so a restart of
 * the service keeps what the "register" holds.
 */
export function createSandboxRegister(deps: { clock: Clock }, settings: SandboxRegisterSettings): SandboxRegister {
  const { clock } = deps;
  const random = settings.random ?? Math.random;
  if (settings.dbPath !== ':memory:') mkdirSync(dirname(settings.dbPath), { recursive: true });
  const db = new Database(settings.dbPath);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE IF NOT EXISTS sandbox_receipts (
      key TEXT PRIMARY KEY, kind TEXT NOT NULL, order_id TEXT NOT NULL, register_id TEXT NOT NULL UNIQUE,
      register_date TEXT NOT NULL, total INTEGER NOT NULL, returns_id TEXT, lottery TEXT, created_at INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS sandbox_register (name TEXT PRIMARY KEY, value INTEGER);
    CREATE TABLE IF NOT EXISTS sandbox_repeats (key TEXT NOT NULL, kind TEXT NOT NULL, order_id TEXT NOT NULL, at INTEGER NOT NULL);`);
  if (settings.lotteryStock !== undefined && settings.lotteryStock !== null)
    db.prepare("INSERT OR IGNORE INTO sandbox_register (name, value) VALUES ('lottery_left', ?)").run(settings.lotteryStock);
  const byKey = db.prepare('SELECT * FROM sandbox_receipts WHERE key = ?');
  const byRegisterId = db.prepare('SELECT * FROM sandbox_receipts WHERE register_id = ?');
  const returnOf = db.prepare('SELECT * FROM sandbox_receipts WHERE returns_id = ?');
  const insert = db.prepare(
    'INSERT INTO sandbox_receipts (key, kind, order_id, register_id, register_date, total, returns_id, lottery, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const insertRepeat = db.prepare('INSERT INTO sandbox_repeats (key, kind, order_id, at) VALUES (?, ?, ?, ?)');
  const lotteryLeft = () =>
    (db.prepare("SELECT value FROM sandbox_register WHERE name = 'lottery_left'").get() as { value: number } | undefined)?.value ?? null;

  let outageUntil: number | null = null;
  let lostRate = settings.lostAnswerRate ?? 0;
  let timeoutRate = settings.timeoutRate ?? 0;
  let loseNext = 0;
  let timeOutNext = 0;
  let nextFreeAt = 0;
  let perSecond = settings.perSecond ?? 0;
  let offlineSince: number | null = null;
  let lastSentAt: number | null = null;

  const down = () => outageUntil !== null && clock.now() < outageUntil;
  const view = (row: SandboxRegisterRow): IssuedReceipt => ({
    registerId: row.register_id,
    registerDate: row.register_date,
    qrData: `SANDBOX-FISCAL|${row.register_id}|${row.total}|${row.register_date}`,
    lottery: row.lottery,
    offline: offlineSince !== null,
  });

  /** Before the commit: an outage, the pace, or a timeout means the register holds nothing new. */
  function refusedBeforeCommit(): RegisterOutcome | null {
    if (down()) return { kind: 'unavailable', message: 'sandbox register: connection refused (outage)' };
    if (perSecond > 0 && clock.now() < nextFreeAt)
      return { kind: 'unavailable', message: 'sandbox register: busy', retryAfterMs: nextFreeAt - clock.now() };
    if (timeOutNext > 0 || random() < timeoutRate) {
      timeOutNext = Math.max(0, timeOutNext - 1);
      return { kind: 'unknown', message: 'sandbox register: timed out before it answered' };
    }
    return null;
  }

  /** After the commit: the answer may be lost on its way back. */
  function answer(row: SandboxRegisterRow): RegisterOutcome {
    if (perSecond > 0) nextFreeAt = clock.now() + Math.ceil(1000 / perSecond);
    lastSentAt = clock.now();
    if (loseNext > 0 || random() < lostRate) {
      loseNext = Math.max(0, loseNext - 1);
      return { kind: 'unknown', message: 'sandbox register: connection reset after the request was sent' };
    }
    return { kind: 'issued', receipt: view(row) };
  }

  /** A call with a key it holds: recorded, then answered with that receipt (or refused while down). */
  function repeated(existing: SandboxRegisterRow): RegisterOutcome {
    insertRepeat.run(existing.key, existing.kind, existing.order_id, clock.now());
    return down() ? { kind: 'unavailable', message: 'sandbox register: connection refused (outage)' } : answer(existing);
  }

  function commit(kind: 'sale' | 'return', request: ReceiptRequest, key: string, returnsId: string | null): SandboxRegisterRow {
    return db
      .transaction(() => {
        const existing = byKey.get(key) as SandboxRegisterRow | undefined;
        if (existing) return existing;
        const now = clock.now();
        const seq = (db.prepare('SELECT count(*) AS n FROM sandbox_receipts').get() as { n: number }).n + 1;
        const registerId = `SBX${String(now).padStart(15, '0')}${String(seq).padStart(8, '0')}`;
        let lottery: string | null = null;
        const left = lotteryLeft();
        if (kind === 'sale' && left !== null && left > 0) {
          db.prepare("UPDATE sandbox_register SET value = value - 1 WHERE name = 'lottery_left'").run();
          lottery = `SB ${String(seq).padStart(8, '0')}`;
        }
        const date = new Date(now).toISOString().replace('T', ' ').slice(0, 19);
        insert.run(key, kind, request.orderId, registerId, date, request.total, returnsId, lottery, now);
        return byKey.get(key) as SandboxRegisterRow;
      })
      .immediate();
  }

  return {
    name: 'sandbox',
    faults: {
      outageUntil(ms) {
        outageUntil = ms;
      },
      loseNextAnswers(n) {
        loseNext = n;
      },
      timeOutNext(n) {
        timeOutNext = n;
      },
      pace(n) {
        perSecond = n;
      },
      offlineSince(ms) {
        offlineSince = ms;
      },
      rates(rates) {
        if (rates.lostAnswerRate !== undefined) lostRate = rates.lostAnswerRate;
        if (rates.timeoutRate !== undefined) timeoutRate = rates.timeoutRate;
      },
    },

    async issue(request) {
      if (request.total <= 0 || request.lines.length === 0)
        return { kind: 'rejected', code: 'bad_request', message: 'a receipt needs a positive total and at least one line' };
      const existing = byKey.get(request.key) as SandboxRegisterRow | undefined;
      if (existing) return repeated(existing);
      const refused = refusedBeforeCommit();
      if (refused) return refused;
      return answer(commit('sale', request, request.key, null));
    },

    async lookup(request): Promise<LookupOutcome> {
      if (down()) return { kind: 'unknown', message: 'sandbox register: connection refused (outage)' };
      const row = byKey.get(request.key) as SandboxRegisterRow | undefined;
      return row ? { kind: 'found', receipt: view(row) } : { kind: 'absent' };
    },

    async returnReceipt(original, request, key) {
      const existing = byKey.get(key) as SandboxRegisterRow | undefined;
      if (existing) return repeated(existing);
      const refused = refusedBeforeCommit();
      if (refused) return refused;
      const sale = byRegisterId.get(original.registerId) as SandboxRegisterRow | undefined;
      if (!sale || sale.kind !== 'sale')
        return { kind: 'rejected', code: 'unknown_receipt', message: `the register holds no sale receipt ${original.registerId}` };
      if (returnOf.get(sale.register_id))
        return { kind: 'rejected', code: 'already_returned', message: `receipt ${original.registerId} was already returned` };
      return answer(commit('return', request, key, sale.register_id));
    },

    async status(): Promise<RegisterStatus> {
      const reachable = !down();
      return {
        reachable,
        ready: true,
        lotteryLeft: lotteryLeft(),
        lastSentAt,
        offlineSince,
        detail: reachable ? 'sandbox register (no tax office)' : 'sandbox register: outage',
      };
    },

    held() {
      return db.prepare('SELECT * FROM sandbox_receipts ORDER BY created_at, rowid').all() as SandboxRegisterRow[];
    },

    repeats() {
      return db.prepare('SELECT key, kind, order_id, at FROM sandbox_repeats ORDER BY rowid').all() as SandboxRegisterRepeat[];
    },

    async close() {
      if (db.open) db.close();
    },
  };
}
