import * as z from 'zod';

const httpUrl = () => z.url({ protocol: /^https?$/, message: 'an http(s) URL such as http://10.0.0.5:7080' });

/** A time zone the runtime knows (the register's day: where a receipt key is unique per day). */
const timeZone = () =>
  z.string().refine(
    (zone) => {
      try {
        new Intl.DateTimeFormat('en-CA', { timeZone: zone });
        return true;
      } catch {
        return false;
      }
    },
    { message: 'an IANA time zone such as Asia/Ulaanbaatar or Asia/Almaty' },
  );

/**
 * Mongolia: eBarimt PosAPI 3.x, the tax office's program. It ships for linux/amd64 only (not the
 * Pi's ARM) and reaches the tax system only from Mongolian networks, so it runs on the operator's
 * server and each machine reaches it over the operator's network or VPN. Its URL is a secret place
 * (PosAPI has no authentication: whoever reaches it issues receipts in the merchant's name): it is
 * never logged in full.
 */
export const ebarimtSchema = () =>
  z
    .object({
      url: httpUrl().optional(),
      /** The merchant's taxpayer number (TIN). */
      merchantTin: z
        .string()
        .regex(/^\d{7,14}$/, 'the merchant TIN: 7 to 14 digits')
        .optional(),
      posNo: z.string().min(1).max(32).optional(),
      branchNo: z
        .string()
        .regex(/^\d{1,8}$/, 'the branch number: digits')
        .default('001'),
      /** The district code of the point of sale: 4 digits. */
      districtCode: z
        .string()
        .regex(/^\d{4}$/, 'the district code: 4 digits such as 3505')
        .optional(),
      vatPayer: z.boolean().default(true),
      cityTax: z.boolean().default(false),
      /** The item classification code used where the catalog gives none: 7 digits. */
      classificationCode: z
        .string()
        .regex(/^\d{7}$/, 'a 7-digit classification code')
        .default('2111000'),
    })
    .strict();

/**
 * Mongolia, through QPay: QPay files each payment's eBarimt receipt (`ebarimt_v3`) with the
 * merchant's QPay credentials (the payment provider's, so `provider.name` must be qpay).
 */
export const qpayEbarimtSchema = () =>
  z
    .object({
      /** CITIZEN (a person at a vending machine) or COMPANY (then receiver: the organisation's TIN). */
      receiverType: z.enum(['CITIZEN', 'COMPANY']).default('CITIZEN'),
      receiver: z
        .string()
        .regex(/^\d{7,14}$/, "the organisation's TIN: 7 to 14 digits")
        .optional(),
      /** The district code of the point of sale: 4 digits. */
      districtCode: z
        .string()
        .regex(/^\d{4}$/, 'the district code: 4 digits such as 3505')
        .optional(),
      /** The item classification code used where the catalog gives none: 7 digits. */
      classificationCode: z
        .string()
        .regex(/^\d{7}$/, 'a 7-digit classification code')
        .default('2111000'),
      /** Bound on one call to QPay (ms). */
      timeoutMs: z.number().int().min(1_000).max(120_000).default(20_000),
    })
    .strict();

/**
 * Kazakhstan: an online cloud register (Webkassa's API). It is reached with the cashier's login and
 * password (the session renewed by the adapter), or with a session token issued beforehand (it lapses:
 * then receipts wait and the register alarm says so). The secrets come from the environment only:
 * VENDGATE_FISCAL_WEBKASSA_PASSWORD, _TOKEN, _API_KEY.
 */
export const webkassaSchema = () =>
  z
    .object({
      url: httpUrl().optional(),
      login: z.string().min(1).max(128).optional(),
      password: z.string().min(1).optional(),
      token: z.string().min(1).optional(),
      /** Sent as x-api-key where the account has one. */
      apiKey: z.string().min(1).optional(),
      /** The organisation pays VAT: every position carries VAT (16 %) inside its price. */
      vatPayer: z.boolean().default(true),
      cashboxId: z.string().min(1).max(64).optional(),
      /** The register works offline at most this long before the law stops it (72 h in Kazakhstan). */
      offlineHoursLimit: z.number().int().min(1).max(720).default(72),
    })
    .strict();

export const fiscalSchema = () =>
  z
    .object({
      /** Which register issues receipts. `none`: no receipts (a market without the duty). */
      register: z.enum(['none', 'sandbox', 'ebarimt', 'webkassa', 'qpay']).default('none'),
      /** The register's calendar (receipt day, sales per day). Absent: this machine's own time zone. */
      timeZone: timeZone().optional(),
      /** How often the fiscal worker looks for receipts due (ms). */
      intervalMs: z.number().int().min(50).max(60_000).default(1_000),
      /** After a lost answer, the register is asked again for the receipt this often (ms). */
      lookupEveryMs: z.number().int().min(100).max(3_600_000).default(30_000),
      /** Longest wait between two attempts while the register is unreachable (ms). */
      retryMaxMs: z.number().int().min(100).max(3_600_000).default(60_000),
      /** MQTT alarm fiscal_register_unreachable once the register has not answered this long. */
      alarmUnreachableAfterMin: z.number().int().min(1).max(10_080).default(15),
      /** MQTT alarm fiscal_receipts_waiting once the oldest receipt waits this long. */
      alarmWaitingAfterMin: z.number().int().min(1).max(10_080).default(60),
      /** MQTT alarm receipt_unknown/<order> (critical) once a receipt's outcome is unknown this long. */
      alarmUnknownAfterMin: z.number().int().min(1).max(10_080).default(30),
      /** MQTT alarm fiscal_lottery_low when eBarimt's lottery numbers left cover fewer days of sales than this. */
      lotteryLowDays: z.number().int().min(1).max(90).default(7),
      /** Refuse new orders once receipts could not be issued for this many hours; 0: never (the default). */
      stopSalesAfterHours: z.number().min(0).max(720).default(0),
      /** The demo's register: its faults (development and tests). */
      sandbox: z
        .object({
          /** Share of issue and return answers lost after the register committed (0–1). */
          lostAnswerRate: z.number().min(0).max(1).default(0),
          /** Share of calls that time out before the register commits (0–1). */
          timeoutRate: z.number().min(0).max(1).default(0),
          /** Receipts handed out per second at most (0: no limit): a register's own pace. */
          perSecond: z.number().min(0).max(1_000).default(0),
          /** Lottery numbers the sandbox starts with (eBarimt-like); null: none (Kazakhstan-like). */
          lotteryStock: z.number().int().min(0).nullable().default(null),
        })
        .strict()
        .prefault({}),
      ebarimt: ebarimtSchema().prefault({}),
      webkassa: webkassaSchema().prefault({}),
      qpay: qpayEbarimtSchema().prefault({}),
    })
    .strict()
    .superRefine((fiscal, ctx) => {
      const missing = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message });
      if (fiscal.register === 'ebarimt') {
        const e = fiscal.ebarimt;
        if (!e.url)
          missing(
            ['ebarimt', 'url'],
            "required for register ebarimt: the PosAPI address on the operator's server, e.g. http://10.0.0.5:7080",
          );
        if (!e.merchantTin) missing(['ebarimt', 'merchantTin'], 'required for register ebarimt: the merchant TIN');
        if (!e.posNo) missing(['ebarimt', 'posNo'], 'required for register ebarimt: the POS number the tax office gave');
        if (!e.districtCode) missing(['ebarimt', 'districtCode'], 'required for register ebarimt: the 4-digit district code');
      }
      if (fiscal.register === 'qpay' && !fiscal.qpay.districtCode)
        missing(['qpay', 'districtCode'], 'required for register qpay: the 4-digit district code where the machine stands');
      if (fiscal.register === 'qpay' && fiscal.qpay.receiverType === 'COMPANY' && !fiscal.qpay.receiver)
        missing(['qpay', 'receiver'], "required for receiverType COMPANY: the organisation's TIN");
      if (fiscal.register === 'webkassa') {
        const w = fiscal.webkassa;
        if (!w.url) missing(['webkassa', 'url'], 'required for register webkassa: the cloud register API address');
        if (!w.token && !(w.login && w.password))
          missing(
            ['webkassa', 'login'],
            'required for register webkassa: login (and VENDGATE_FISCAL_WEBKASSA_PASSWORD), or a session token in VENDGATE_FISCAL_WEBKASSA_TOKEN',
          );
        if (w.login && !w.password)
          missing(['webkassa', 'password'], 'the login needs its password: set VENDGATE_FISCAL_WEBKASSA_PASSWORD');
        if (!w.cashboxId) missing(['webkassa', 'cashboxId'], 'required for register webkassa: the cashbox unique number');
      }
    });

export type FiscalSettings = z.infer<ReturnType<typeof fiscalSchema>>;

/** "http://10.0.0.5:7080/…" → "http://10.0.0.5:…": enough for a person to know which one, not enough to use it. */
export function redactUrl(url: string | undefined): string {
  if (!url) return '(not set)';
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.hostname.replace(/^(.{0,3}).*$/, '$1…')}`;
  } catch {
    return '(unreadable)';
  }
}
