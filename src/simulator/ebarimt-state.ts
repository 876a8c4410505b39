import { SimHttpError } from './request-checks.js';

/**
 * A PosAPI 3.x daemon's rules, written from its public manual (not from the adapter): receipts
 * (POST /rest/receipt), returns (DELETE /rest/receipt), the offline queue and its send. Amounts
 * on the wire are tögrög with up to two decimals; here they are held in hundredths (möngö).
 */

export interface EbarimtMerchant {
  tin: string;
  name: string;
  vatPayer: boolean;
  cityTax: boolean;
}

export interface EbarimtSimOptions {
  /** The merchants this PosAPI is registered for. Default: one merchant, VAT payer with city tax. */
  merchants?: EbarimtMerchant[];
  /** False: installed but not activated by an operator; every receipt call is refused. Default true. */
  activated?: boolean;
  /** Lottery numbers left; B2C receipts carry none once they run out. Default 1000. */
  lotteries?: number;
  /** The tax system is reachable: receipts are sent at once. False: they queue until sendData. Default true. */
  taxSystemReachable?: boolean;
  /** Ulaanbaatar time, UTC+8. */
  utcOffsetMinutes?: number;
  posId?: number;
  posNo?: string;
}

export const EBARIMT_SIM_DEFAULTS = Object.freeze({
  merchant: Object.freeze({ tin: '10000000001', name: 'SIM VENDING LLC', vatPayer: true, cityTax: true }),
  lotteries: 1000,
  utcOffsetMinutes: 480,
  posId: 100200300,
  posNo: '10020030',
  /** PosAPI stops giving lottery numbers when it has not sent its queue for this long. */
  sendDeadlineMs: 72 * 3600_000,
});

export interface HeldReceipt {
  id: string;
  merchantTin: string;
  billIdSuffix: string | null;
  day: string;
  date: string;
  type: string;
  totalCents: number;
  vatCents: number;
  cityTaxCents: number;
  lottery: string;
  qrData: string;
  status: 'active' | 'returned' | 'corrected';
  /** The receipt this one corrects (`inactiveId`). */
  replaces: string | null;
  sent: boolean;
  body: unknown;
}

export function createEbarimtState(clock: { now(): number }, options: EbarimtSimOptions = {}) {
  const d = EBARIMT_SIM_DEFAULTS;
  const merchants = new Map((options.merchants ?? [d.merchant]).map((m) => [m.tin, { ...m }]));
  const offsetMs = (options.utcOffsetMinutes ?? d.utcOffsetMinutes) * 60_000;
  const posId = options.posId ?? d.posId;
  const posNo = options.posNo ?? d.posNo;
  let activated = options.activated ?? true;
  let lotteries = options.lotteries ?? d.lotteries;
  let taxSystemReachable = options.taxSystemReachable ?? true;
  let lastSentAt: number | null = null;
  let lotterySeq = 0;
  let seq = 0;
  const receipts: HeldReceipt[] = [];
  const byId = new Map<string, HeldReceipt>();
  /** `tin|day|billIdSuffix` → receipt id: the suffix is unique within a day. */
  const suffixes = new Map<string, string>();

  /** "yyyy-MM-dd HH:mm:ss" in the daemon's zone. */
  const localDate = (ms: number) => new Date(ms + offsetMs).toISOString().slice(0, 19).replace('T', ' ');

  function requireActivated(): void {
    if (!activated) throw new SimHttpError(400, 'ERROR', 'PosAPI is not activated: an operator must log in and activate it first');
  }

  function sendQueue(): number {
    const queued = receipts.filter((r) => !r.sent);
    for (const r of queued) r.sent = true;
    lastSentAt = clock.now();
    return queued.length;
  }

  function nextLottery(type: string): string {
    if (type !== 'B2C_RECEIPT' || lotteries <= 0) return '';
    const overdue = lastSentAt !== null && clock.now() - lastSentAt > d.sendDeadlineMs;
    if (overdue) return '';
    lotteries -= 1;
    lotterySeq += 1;
    return `SM ${String(lotterySeq).padStart(8, '0')}`;
  }

  return {
    merchant: (tin: string) => merchants.get(tin),
    requireActivated,

    /** Commits a receipt whose body receipt-checks.ts accepted. */
    issue(checked: CheckedReceipt, body: unknown): HeldReceipt {
      requireActivated();
      const now = clock.now();
      const date = localDate(now);
      const day = date.slice(0, 10);
      // Without a suffix the daemon numbers the receipt itself: nothing to be unique.
      const suffixKey = checked.billIdSuffix === null ? null : `${checked.merchantTin}|${day}|${checked.billIdSuffix}`;
      const prior = suffixKey === null ? undefined : suffixes.get(suffixKey);
      if (prior !== undefined) {
        throw new SimHttpError(
          400,
          'ERROR',
          `billIdSuffix ${checked.billIdSuffix} was already used today by receipt ${prior}: it must be unique within the day`,
        );
      }
      let replaced: HeldReceipt | undefined;
      if (checked.inactiveId) {
        replaced = byId.get(checked.inactiveId);
        if (!replaced || replaced.status !== 'active')
          throw new SimHttpError(400, 'ERROR', `inactiveId ${checked.inactiveId}: no active receipt with this id to correct`);
      }
      seq += 1;
      const id = `${checked.merchantTin.padStart(14, '0')}${day.replace(/-/g, '').slice(2)}${String(seq).padStart(13, '0')}`;
      // A correction keeps the lottery of the receipt it replaces: it gets none of its own.
      const lottery = replaced ? '' : nextLottery(checked.type);
      const receipt: HeldReceipt = {
        id,
        merchantTin: checked.merchantTin,
        billIdSuffix: checked.billIdSuffix,
        day,
        date,
        type: checked.type,
        totalCents: checked.totalCents,
        vatCents: checked.vatCents,
        cityTaxCents: checked.cityTaxCents,
        lottery,
        qrData: `${id}${String(checked.totalCents).padStart(12, '0')}${String(seq * 7919).padStart(16, '0')}`,
        status: 'active',
        replaces: replaced?.id ?? null,
        sent: false,
        body,
      };
      if (replaced) replaced.status = 'corrected';
      receipts.push(receipt);
      byId.set(id, receipt);
      if (suffixKey !== null) suffixes.set(suffixKey, id);
      if (taxSystemReachable) sendQueue();
      return receipt;
    },

    /** DELETE /rest/receipt: a full return of an active B2C receipt, named by its id and its printed date. */
    returnReceipt(id: string, date: string): HeldReceipt {
      requireActivated();
      const receipt = byId.get(id);
      if (!receipt) throw new SimHttpError(400, 'ERROR', `receipt ${id} not found`);
      if (receipt.date !== date)
        throw new SimHttpError(400, 'ERROR', `date ${date} is not the date of receipt ${id} (expected the printed "yyyy-MM-dd HH:mm:ss")`);
      if (receipt.status !== 'active') throw new SimHttpError(400, 'ERROR', `receipt ${id} is already ${receipt.status}`);
      receipt.status = 'returned';
      receipt.sent = false;
      if (taxSystemReachable) sendQueue();
      return receipt;
    },

    /** GET /rest/sendData. */
    sendData(): number {
      requireActivated();
      if (!taxSystemReachable)
        throw new SimHttpError(503, 'ERROR', 'the tax system cannot be reached: the queue stays until the next send');
      return sendQueue();
    },

    info() {
      if (!activated) {
        return { operatorName: '', operatorTIN: '', posId: 0, posNo: '', lastSentDate: '', leftLotteries: 0, merchants: [] };
      }
      return {
        operatorName: 'SIM OPERATOR',
        operatorTIN: '10000000009',
        posId,
        posNo,
        lastSentDate: lastSentAt === null ? '' : localDate(lastSentAt),
        leftLotteries: lotteries,
        appInfo: {
          applicationDir: '/opt/posapi',
          currentDir: '/opt/posapi',
          database: 'QSQLITE',
          'database-host': 'posapi.db',
          workDir: '/opt/posapi',
        },
        merchants: [...merchants.values()].map((m) => ({ name: m.name, tin: m.tin, customers: [] })),
      };
    },

    configure(change: { activated?: boolean; lotteries?: number; taxSystemReachable?: boolean; lastSentAt?: number | null }) {
      if (change.activated !== undefined) activated = change.activated;
      if (change.lotteries !== undefined) lotteries = change.lotteries;
      if (change.taxSystemReachable !== undefined) taxSystemReachable = change.taxSystemReachable;
      if (change.lastSentAt !== undefined) lastSentAt = change.lastSentAt;
    },

    view: () => ({
      activated,
      lotteries,
      taxSystemReachable,
      lastSentAt,
      queued: receipts.filter((r) => !r.sent).length,
      merchants: [...merchants.values()],
    }),
    receipts: () => structuredClone(receipts),
    localDate,
  };
}

export type EbarimtState = ReturnType<typeof createEbarimtState>;

/** What receipt-checks accepted, in hundredths. */
export interface CheckedReceipt {
  merchantTin: string;
  billIdSuffix: string | null;
  type: string;
  inactiveId: string | null;
  totalCents: number;
  vatCents: number;
  cityTaxCents: number;
}
