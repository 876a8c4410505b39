import { durably, inTransaction, type Db } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { errorMessage } from '../util/errors.js';
import type { Outbox } from '../outbox/index.js';
import type { FiscalRegister, IssuedReceipt, LookupOutcome, ReceiptRequest, RegisterOutcome } from './types.js';
import type { ReceiptBook, ReceiptRow } from './receipts.js';

export interface FiscalWorkerSettings {
  /** After a lost answer the register is asked about the receipt again this often. */
  lookupEveryMs: number;
  /** Longest wait between two attempts while the register is unreachable. */
  retryMaxMs: number;
}

/** What the customer's result screen shows of an order's receipt. */
export type ScreenReceipt =
  { status: 'issued'; qrData: string | null; lottery: string | null } | { status: 'pending'; qrData: null; lottery: null };

export interface FiscalWorker {
  /** Start-up, before the first pass: a receipt left `sending` has an unknown outcome. Returns how many. */
  recover(): number;
  /** One pass over what is due; concurrent calls share one pass. */
  run(): Promise<void>;
  /**
   * Inside the vend's settle commit (synchronous=FULL): may its sale receipt be written already
   * claimed for its first call, sparing the claim's own commit? Only when the next pass will call
   * the register at once: the worker is started and idle, the register answers, nothing else waits.
   */
  mayClaimWithSale(): boolean;
  /**
   * The sale receipt `id` (under `key`) was written claimed in the settle commit: the next pass calls
   * the register for it first. A row that is not there (the commit rolled back) is passed over.
   */
  claimedWithSale(id: number, key: string): void;
  /** No new pass; the call in flight finishes and its answer is recorded before this resolves. */
  stop(): Promise<void>;
  /** The receipt of an order as the result screen shows it (QR data kept in memory only), or null when none is owed. */
  screen(orderId: number): ScreenReceipt | null;
  /** Since when the register has not answered (ms since epoch), or null while it answers. */
  unreachableSince(): number | null;
  /**
   * Since when the register has refused every receipt until a person acts on it (a lapsed token,
   * credentials, not activated: `blocked`), or null. `lastError()` says what to do.
   */
  blockedSince(): number | null;
  /** Something other than a receipt call (the status) heard the register answer: it is not down. */
  heard(): void;
  /** When the register last answered a call (ms since epoch), or null. */
  lastAnsweredAt(): number | null;
  /** The last error the register gave, for the operator. */
  lastError(): string | null;
}

/** QR data and lottery numbers stay in memory this long and for this many receipts at most. */
const SCREEN_KEEP_MS = 10 * 60_000;
const SCREEN_KEEP_ENTRIES = 16;
/** A register that is down has its status asked at least this often (asking writes nothing). */
const PROBE_EVERY_MAX_MS = 5_000;
/** Receipts looked at per pass. */
const PASS_LIMIT = 50;

/**
 * Sends each owed receipt with the key and request fixed when it was queued. Each call is claimed
 * durably first (`sending`, synchronous=FULL), so a crash or power cut mid-call leaves `sending`,
 * which start-up turns into `unknown`. An unknown outcome (a lost answer, a timeout, a restart) is
 * never re-sent blindly: the register is asked by key (`lookup`) first; only `absent` issues again,
 * with the same key. A return waits for its sale's receipt.
 */
export function createFiscalWorker(
  deps: {
    db: Db;
    clock: Clock;
    logger: Logger;
    outbox: Outbox;
    register: FiscalRegister;
    book: ReceiptBook;
    /** A receipt came in (the screen shows its QR). */
    onChange?: () => void;
    /** Test-only crash points; a no-op in production. */
    crashPoint?: (name: string) => void;
  },
  settings: FiscalWorkerSettings,
): FiscalWorker {
  const { db, clock, outbox, register, book } = deps;
  const log = deps.logger.child({ module: 'fiscal' });
  const crash = deps.crashPoint ?? (() => {});
  const shown = new Map<number, { qrData: string | null; lottery: string | null; at: number }>();
  let running: Promise<void> | null = null;
  let stopped = false;
  let failures = 0;
  let downSince: number | null = null;
  let blockedAt: number | null = null;
  /** The status said the register answers again; the next answered call sends what waited. */
  let backSoon = false;
  let lastError: string | null = null;

  let answeredAt: number | null = null;
  /** A register that said "come back at" (its pace) is not called before then. */
  let pausedUntil = 0;
  /**
   * While the register is down or blocked, nothing is claimed before this time (the backoff, for the
   * register as a whole); then its status is asked first, which writes nothing: a register that is
   * down costs no database write per pass or per receipt.
   */
  let retryAt = 0;
  /** While it is down, its status is not asked again before this time. */
  let probeAt = 0;
  /** Sale receipts written claimed (`sending`) in their vend's settle commit, not yet called. */
  const claimedAtSale: { id: number; key: string }[] = [];
  const reached = () => {
    const wasDown = downSince !== null || blockedAt !== null || backSoon;
    backSoon = false;
    retryAt = 0;
    probeAt = 0;
    failures = 0;
    downSince = null;
    blockedAt = null;
    answeredAt = clock.now();
    // Back after an outage: what waited for it goes now, not at each receipt's own backoff time.
    if (wasDown) {
      const due = inTransaction(db, () => book.expedite(clock.now()));
      if (due) log.info({ receipts: due }, 'the fiscal register answers again: sending what waited');
    }
  };
  const unreached = (message: string) => {
    failures += 1;
    downSince ??= clock.now();
    lastError = message;
  };
  /** The register answers, but takes no receipt until a person acts on it: not down, blocked. */
  const blocked = (message: string) => {
    failures += 1;
    blockedAt ??= clock.now();
    downSince = null;
    answeredAt = clock.now();
    lastError = message;
  };
  /** The register's own retry time where it gives one, else doubling from 500 ms up to retryMaxMs. */
  const backoff = (retryAfterMs?: number) =>
    Math.min(settings.retryMaxMs, retryAfterMs ?? 500 * 2 ** Math.min(Math.max(failures - 1, 0), 16));

  function remember(orderId: number, receipt: IssuedReceipt): void {
    const now = clock.now();
    shown.set(orderId, { qrData: receipt.qrData, lottery: receipt.lottery, at: now });
    for (const [id, entry] of shown) if (now - entry.at > SCREEN_KEEP_MS || shown.size > SCREEN_KEEP_ENTRIES) shown.delete(id);
  }

  function issued(row: ReceiptRow, receipt: IssuedReceipt, how: string): void {
    inTransaction(db, () => {
      const moved = book.move(row.id, ['sending', 'unknown', 'queued'], {
        state: 'issued',
        register_id: receipt.registerId,
        register_date: receipt.registerDate,
        offline: receipt.offline ? 1 : 0,
        issued_at: clock.now(),
        last_error: null,
      });
      if (!moved) return;
      outbox.clearAlarm(`receipt_unknown/${row.order_id}`);
      outbox.event('receipt.issued', { orderId: row.order_id, kind: row.kind, key: row.key, registerId: receipt.registerId, how });
      outbox.count(row.kind === 'sale' ? 'receipts_issued' : 'receipts_returned');
    });
    if (row.kind === 'sale') remember(row.order_id, receipt);
    log.info({ orderId: row.order_id, kind: row.kind, registerId: receipt.registerId, how }, 'receipt issued');
    deps.onChange?.();
  }

  function rejected(row: ReceiptRow, code: string, message: string): void {
    inTransaction(db, () => {
      if (
        !book.move(row.id, ['sending', 'unknown', 'queued'], {
          state: 'rejected',
          last_error: `${code}: ${message}`,
          alarmed_at: clock.now(),
        })
      )
        return;
      outbox.raiseAlarm(
        `receipt_rejected/${row.order_id}`,
        'critical',
        'the fiscal register refused a receipt and it is not retried: issue it by hand in the register (the reason is in the receipts table, last_error)',
        { orderId: row.order_id, kind: row.kind, key: row.key, code, message },
      );
      outbox.event('receipt.rejected', { orderId: row.order_id, kind: row.kind, key: row.key, code, message });
    });
    log.error({ orderId: row.order_id, kind: row.kind, code, message }, 'receipt refused by the register');
  }

  /** Outcome of an issue or return call. Returns false when the register is down (the pass stops). */
  function settle(row: ReceiptRow, outcome: RegisterOutcome): boolean {
    const now = clock.now();
    switch (outcome.kind) {
      case 'issued':
        reached();
        issued(row, outcome.receipt, 'answer');
        return true;
      case 'rejected':
        reached();
        rejected(row, outcome.code, outcome.message);
        return true;
      case 'unavailable':
        // It certainly did not reach the register: the same request may be sent again. A register
        // that says when to come back (busy, its own pace) answers: it is not counted as down.
        if (outcome.retryAfterMs === undefined) unreached(outcome.message);
        else pausedUntil = now + outcome.retryAfterMs;
        inTransaction(db, () =>
          book.move(row.id, ['sending'], { state: 'queued', next_at: now + backoff(outcome.retryAfterMs), last_error: outcome.message }),
        );
        return false;
      case 'blocked':
        // Nothing was filed and nothing of this receipt is wrong: it waits for the register.
        blocked(outcome.message);
        inTransaction(db, () => book.move(row.id, ['sending'], { state: 'queued', next_at: now + backoff(), last_error: outcome.message }));
        log.warn(
          { orderId: row.order_id, kind: row.kind, detail: outcome.message },
          'the fiscal register takes no receipt until a person acts',
        );
        return false;
      case 'unknown':
        unreached(outcome.message);
        inTransaction(db, () => {
          if (book.move(row.id, ['sending'], { state: 'unknown', next_at: now + settings.lookupEveryMs, last_error: outcome.message }))
            outbox.event('receipt.unknown', { orderId: row.order_id, kind: row.kind, key: row.key, detail: outcome.message });
        });
        log.warn(
          { orderId: row.order_id, kind: row.kind, detail: outcome.message },
          'receipt outcome unknown: the register is asked before any retry',
        );
        return false;
    }
  }

  /** An unknown receipt: asked by key. Returns whether it may be issued now (the register holds none). */
  async function reconcile(row: ReceiptRow, request: ReceiptRequest): Promise<boolean> {
    let found: LookupOutcome;
    try {
      found = await register.lookup(request);
    } catch (err) {
      found = { kind: 'unknown', message: errorMessage(err) };
    }
    if (found.kind === 'found') {
      reached();
      issued(row, found.receipt, 'lookup');
      return false;
    }
    if (found.kind === 'unknown' || found.kind === 'cannot_tell' || found.kind === 'blocked') {
      // `cannot_tell` (eBarimt: PosAPI cannot be asked) says nothing of whether the register
      // answers: the receipt waits for a person, and the register is not counted as down.
      if (found.kind === 'unknown') unreached(found.message);
      if (found.kind === 'blocked') blocked(found.message);
      inTransaction(db, () => book.move(row.id, ['unknown'], { next_at: clock.now() + settings.lookupEveryMs, last_error: found.message }));
      return false;
    }
    reached();
    return inTransaction(db, () => book.move(row.id, ['unknown'], { state: 'queued', next_at: clock.now() }));
  }

  /** A return is sent once its sale holds a register receipt id. Returns the sale's receipt, or null (not yet). */
  function saleFor(row: ReceiptRow): IssuedReceipt | null {
    const sale = book.saleOf(row.order_id);
    if (sale?.state === 'issued') return book.issuedOf(sale);
    if (!sale || sale.state === 'rejected' || sale.state === 'canceled') {
      inTransaction(db, () => book.move(row.id, ['queued'], { state: 'canceled', last_error: 'the sale has no receipt to return' }));
    } else {
      inTransaction(db, () => book.move(row.id, ['queued', 'unknown'], { next_at: clock.now() + settings.lookupEveryMs }));
    }
    return null;
  }

  async function send(row: ReceiptRow): Promise<boolean> {
    const request = JSON.parse(row.request_json) as ReceiptRequest;
    const original = row.kind === 'return' ? saleFor(row) : null;
    if (row.kind === 'return' && !original) return true;
    // The pass goes on past a receipt that waits for a person, not past a register that is down or blocked.
    if (row.state === 'unknown' && !(await reconcile(row, request))) return downSince === null && blockedAt === null;
    // Claimed durably before the call: a crash from here on is `unknown` at the next start.
    const claimed = durably(db, () => book.claim(row.id, clock.now()), 'receipt_claim');
    if (!claimed) return true;
    return call(row, request, original);
  }

  /** The register call of a claimed receipt (`sending` on disk) and its outcome. Returns whether the pass goes on. */
  async function call(row: ReceiptRow, request: ReceiptRequest, original: IssuedReceipt | null): Promise<boolean> {
    crash('after_receipt_claim');
    let outcome: RegisterOutcome;
    try {
      outcome =
        original === null
          ? await register.issue(request)
          : await register.returnReceipt(original, { ...request, key: request.key.replace(/-return$/, '-sale') }, row.key);
    } catch (err) {
      // Whatever failed, the register may have committed: asked by key before any retry.
      outcome = { kind: 'unknown', message: errorMessage(err) };
    }
    crash('after_receipt_call');
    return settle(book.get(row.id) ?? row, outcome);
  }

  /** A sale receipt claimed in its settle commit: called now (it is `sending` already; no claim of its own). */
  async function sendClaimedAtSale(claimed: { id: number; key: string }): Promise<boolean> {
    const row = book.get(claimed.id);
    if (row?.state !== 'sending' || row.kind !== 'sale' || row.key !== claimed.key) return true;
    return call(row, JSON.parse(row.request_json) as ReceiptRequest, null);
  }

  /**
   * The register is down or blocked: no claim before the backoff's time, and then only once its
   * status says it answers (asking writes nothing). Returns whether the pass may claim.
   */
  async function mayCall(): Promise<boolean> {
    if (downSince === null && blockedAt === null) return true;
    const now = clock.now();
    if (now < retryAt) return false;
    if (downSince !== null) {
      // The status is asked on the backoff too, but at least every PROBE_EVERY_MAX_MS: asking writes
      // nothing, and the backlog goes within seconds of the register answering again.
      if (now < probeAt) return false;
      const status = await register.status().catch(() => null);
      probeAt = clock.now() + Math.min(backoff(), PROBE_EVERY_MAX_MS);
      if (!status?.reachable) {
        failures += 1;
        return false;
      }
    }
    // It answers (or it is blocked, which only a call can tell is over): one call, and if that
    // fails, the next after the next backoff step.
    retryAt = clock.now() + backoff();
    return true;
  }

  async function runOnce(): Promise<void> {
    // Claimed in the settle commit: called before anything else (the claim's window stays short).
    while (claimedAtSale.length > 0) {
      if (stopped) return;
      const claimed = claimedAtSale.shift();
      if (claimed && !(await sendClaimedAtSale(claimed))) return;
    }
    if (clock.now() < pausedUntil) return;
    // Nothing due: nothing to ask the register either.
    if (book.due(clock.now(), 1).length === 0) return;
    if (!(await mayCall())) return;
    for (const row of book.due(clock.now(), PASS_LIMIT)) {
      if (stopped) return;
      const goOn = await send(row);
      if (!goOn) return;
    }
  }

  return {
    recover() {
      // At start every receipt still owed is tried at once, whatever backoff it had before.
      const n = inTransaction(db, () => {
        book.expedite(clock.now());
        return book.recover();
      });
      if (n) log.warn({ receipts: n }, 'receipts interrupted by a restart: the register is asked about each before any retry');
      return n;
    },
    run() {
      if (stopped) return Promise.resolve();
      running ??= runOnce().finally(() => {
        running = null;
      });
      return running;
    },
    mayClaimWithSale() {
      return (
        !stopped &&
        running === null &&
        claimedAtSale.length === 0 &&
        downSince === null &&
        blockedAt === null &&
        !backSoon &&
        clock.now() >= pausedUntil &&
        book.due(clock.now(), 1).length === 0
      );
    },
    claimedWithSale(id, key) {
      claimedAtSale.push({ id, key });
    },
    async stop() {
      stopped = true;
      await running?.catch(() => {});
      // Claimed with their sale and never called: queued again (a plain commit; were it lost to a
      // power cut, the restart would find `sending` and ask the register first, as after any claim).
      const unsent = claimedAtSale.splice(0);
      if (unsent.length > 0)
        inTransaction(db, () => {
          for (const { id, key } of unsent)
            if (book.get(id)?.key === key) book.move(id, ['sending'], { state: 'queued', attempts: 0, claimed_at: null });
        });
    },
    screen(orderId) {
      const entry = shown.get(orderId);
      if (entry) return { status: 'issued', qrData: entry.qrData, lottery: entry.lottery };
      const sale = book.saleOf(orderId);
      if (!sale) return null;
      return sale.state === 'issued'
        ? { status: 'issued', qrData: null, lottery: null }
        : { status: 'pending', qrData: null, lottery: null };
    },
    unreachableSince: () => downSince,
    blockedSince: () => blockedAt,
    heard() {
      // Its status answers: not down. What waited goes at the first receipt call that goes through
      // (a blocked register stays blocked until it takes a receipt).
      if (downSince === null) return;
      downSince = null;
      backSoon = true;
      if (blockedAt === null) retryAt = 0;
    },
    lastAnsweredAt: () => answeredAt,
    lastError: () => lastError,
  };
}
