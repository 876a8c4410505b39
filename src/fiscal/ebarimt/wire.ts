/**
 * PosAPI 3.x's wire format (src/fiscal/ebarimt/README.md): the body of POST /rest/receipt built
 * from a ReceiptRequest, and the answers read back. Amounts are tögrög on the wire with up to two
 * decimals; vendgate's MNT amounts are whole tögrög, so the taxes are split in hundredths (möngö)
 * to meet PosAPI's 0.01 check of each item's VAT and city tax.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { splitTax, type TaxRegistration } from '../tax.js';
import type { ReceiptRequest } from '../types.js';

export interface ReceiptIdentity {
  merchantTin: string;
  posNo: string;
  branchNo: string;
  districtCode: string;
  registration: TaxRegistration;
  /** Payment code of a QR wallet payment; default BANK_TRANSFER. */
  paymentCode: string;
  /** Unit of a line without one; default "ш" (piece). */
  defaultUnit: string;
  /** Classification code of a line without one (7 digits); null: such a line is refused. */
  defaultClassificationCode: string | null;
}

/** Digits of the billIdSuffix derived from a key. */
export const BILL_ID_SUFFIX_DIGITS = 10;

/**
 * The day-unique billIdSuffix of a receipt: 10 decimal digits of SHA-256 of its key, so every
 * attempt of one receipt sends the same suffix and two receipts of a day collide with odds of about
 * n² / 2·10¹⁰ (1 in 20,000 at a thousand receipts a day on one POS).
 */
export function billIdSuffixOf(key: string): string {
  const digest = createHash('sha256').update(key, 'utf8').digest();
  return (digest.readBigUInt64BE(0) % 10n ** BigInt(BILL_ID_SUFFIX_DIGITS)).toString().padStart(BILL_ID_SUFFIX_DIGITS, '0');
}

/** Hundredths → a wire amount (2,500.5 → 2500.5). */
const wire = (cents: number) => cents / 100;

/** The POST /rest/receipt body, or the list of what is wrong with the request. */
export function receiptBody(request: ReceiptRequest, id: ReceiptIdentity): { body: Record<string, unknown> } | { problems: string[] } {
  const problems: string[] = [];
  if (request.lines.length === 0) problems.push('a receipt needs at least one line');
  let sum = 0;
  const items = request.lines.map((line, i) => {
    const code = line.classificationCode ?? id.defaultClassificationCode;
    if (code === null || !/^\d{7}$/.test(code))
      problems.push(`line ${i + 1} (${line.name}): a 7-digit classification code is required, got ${String(code)}`);
    if (!(line.quantity > 0)) problems.push(`line ${i + 1}: quantity must be above 0`);
    if (!Number.isSafeInteger(line.unitPrice) || line.unitPrice <= 0)
      problems.push(`line ${i + 1}: unit price must be a positive whole amount`);
    const amount = Math.round(line.quantity * line.unitPrice);
    sum += amount;
    const split =
      Number.isSafeInteger(amount) && amount >= 0 ? splitTax(amount * 100, id.registration) : { total: 0, vat: 0, cityTax: 0, net: 0 };
    return {
      name: line.name,
      barCode: null,
      barCodeType: 'UNDEFINED',
      classificationCode: code,
      taxProductCode: null,
      measureUnit: line.unit ?? id.defaultUnit,
      qty: line.quantity,
      unitPrice: line.unitPrice,
      totalVAT: wire(split.vat),
      totalCityTax: wire(split.cityTax),
      totalAmount: wire(split.total),
    };
  });
  if (sum !== request.total) problems.push(`the total ${request.total} is not the sum of the lines ${sum}`);
  if (problems.length > 0) return { problems };
  const totalVat = items.reduce((acc, item) => acc + Math.round(item.totalVAT * 100), 0);
  const totalCity = items.reduce((acc, item) => acc + Math.round(item.totalCityTax * 100), 0);
  return {
    body: {
      branchNo: id.branchNo,
      totalAmount: request.total,
      totalVAT: wire(totalVat),
      totalCityTax: wire(totalCity),
      districtCode: id.districtCode,
      merchantTin: id.merchantTin,
      posNo: id.posNo,
      customerTin: null,
      consumerNo: null,
      type: 'B2C_RECEIPT',
      inactiveId: null,
      reportMonth: null,
      billIdSuffix: billIdSuffixOf(request.key),
      receipts: [
        {
          totalAmount: request.total,
          taxType: 'VAT_ABLE',
          merchantTin: id.merchantTin,
          customerTin: null,
          totalVAT: wire(totalVat),
          totalCityTax: wire(totalCity),
          items,
        },
      ],
      payments: [{ code: id.paymentCode, exchangeCode: request.payment.provider, status: 'PAID', paidAmount: request.total, data: null }],
    },
  };
}

/** A SUCCESS answer of POST /rest/receipt: only the fields vendgate uses. */
export const receiptAnswerSchema = z.object({
  status: z.literal('SUCCESS'),
  id: z.string().regex(/^\d{33}$/),
  date: z.string().min(1),
  qrData: z.string().nullish(),
  lottery: z.string().nullish(),
});

/** PosAPI's refusal: `{ status: "ERROR" | "PAYMENT", message }`. */
export function refusalOf(body: unknown): { status: string; message: string } | null {
  if (typeof body !== 'object' || body === null) return null;
  const { status, message } = body as { status?: unknown; message?: unknown };
  if (typeof status !== 'string' || status === 'SUCCESS') return null;
  return { status, message: typeof message === 'string' && message !== '' ? message : '(no message)' };
}

/** Numbers and TINs are read whether PosAPI sends them as numbers or as strings. */
const text = z.union([z.string(), z.number()]).transform(String);
const count = z
  .union([z.number(), z.string()])
  .transform((v) => (Number.isFinite(Number(v)) && String(v).trim() !== '' ? Number(v) : null));

export const infoAnswerSchema = z.object({
  posId: z.union([z.number(), z.string()]).nullish(),
  posNo: text.nullish(),
  lastSentDate: z.string().nullish(),
  leftLotteries: count.nullish(),
  merchants: z.array(z.object({ tin: text, name: z.string().nullish() }).passthrough()).nullish(),
});

/** PosAPI's "yyyy-MM-dd HH:mm:ss" in its zone (Ulaanbaatar, UTC+8) → ms; null when empty or unreadable. */
export function parsePosDate(text: string | null | undefined, utcOffsetMinutes: number): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$/.exec(text ?? '');
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s) - utcOffsetMinutes * 60_000;
}
