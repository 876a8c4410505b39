/**
 * Webkassa's wire format (src/fiscal/webkassa/README.md): PascalCase JSON, the Token in the body,
 * errors as `{ Errors: [{ Code, Text }] }` in an HTTP 200 answer. Amounts are tenge with up to two
 * decimals; vendgate's amounts are whole units, so VAT is split in hundredths (tiyn).
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { splitTax } from '../tax.js';
import type { ReceiptRequest } from '../types.js';

/** Webkassa's error codes the adapter acts on. */
export const WK_CODES = {
  BUSY: -1,
  WRONG_CREDENTIALS: 1,
  SESSION_EXPIRED: 2,
  NOT_AUTHORIZED: 3,
  NO_ACCESS: 4,
  NO_CASHBOX_ACCESS: 5,
  CASHBOX_NOT_FOUND: 6,
  CASHBOX_BLOCKED: 7,
  VALIDATION: 9,
  CASHBOX_NOT_ACTIVATED: 10,
  SHIFT_OVER_24H: 11,
  DUPLICATE_EXTERNAL_NUMBER: 14,
  CHECK_NOT_FOUND: 16,
  OFFLINE_TOO_LONG: 18,
  SERVICE_UNAVAILABLE: 505,
} as const;

export const OPERATION = { sale: 2, saleReturn: 3 } as const;

/** Webkassa keeps ExternalCheckNumber to 50 characters: a longer key is replaced by a stable digest. */
export function externalCheckNumberOf(key: string): string {
  if (key.length <= 50) return key;
  return `vg-${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 40)}`;
}

export interface CheckIdentity {
  cashboxUniqueNumber: string;
  vatPayer: boolean;
  vatPercent: number;
  /** PaymentType of a QR wallet payment (4, mobile, by default). */
  paymentType: number;
  /** UnitCode of a line without a unit (796, a piece). */
  unitCode: number;
}

const wire = (cents: number) => cents / 100;

/** The body of POST /api/v4/Check without the Token, or what is wrong with the request. */
export function checkBody(
  request: ReceiptRequest,
  id: CheckIdentity,
  operationType: number,
  externalCheckNumber: string,
): { body: Record<string, unknown> } | { problems: string[] } {
  const problems: string[] = [];
  if (request.lines.length === 0) problems.push('a check needs at least one line');
  let sum = 0;
  const positions = request.lines.map((line, i) => {
    if (!(line.quantity > 0)) problems.push(`line ${i + 1}: quantity must be above 0`);
    if (!Number.isSafeInteger(line.unitPrice) || line.unitPrice <= 0)
      problems.push(`line ${i + 1}: unit price must be a positive whole amount`);
    const amount = Math.round(line.quantity * line.unitPrice);
    sum += amount;
    const vat =
      id.vatPayer && Number.isSafeInteger(amount) && amount >= 0
        ? splitTax(amount * 100, { vatPayer: true, cityTax: false }, { vatPercent: id.vatPercent, cityTaxPercent: 0 }).vat
        : 0;
    const unitCode = line.unit !== null && /^\d+$/.test(line.unit) ? Number(line.unit) : id.unitCode;
    return {
      Count: line.quantity,
      Price: line.unitPrice,
      TaxPercent: id.vatPayer ? id.vatPercent : 0,
      Tax: wire(vat),
      TaxType: id.vatPayer ? 100 : 0,
      PositionName: line.name,
      PositionCode: line.classificationCode ?? undefined,
      Discount: 0,
      Markup: 0,
      UnitCode: unitCode,
    };
  });
  if (sum !== request.total) problems.push(`the total ${request.total} is not the sum of the lines ${sum}`);
  if (problems.length > 0) return { problems };
  return {
    body: {
      CashboxUniqueNumber: id.cashboxUniqueNumber,
      OperationType: operationType,
      Positions: positions,
      Payments: [{ Sum: request.total, PaymentType: id.paymentType }],
      Change: 0,
      RoundType: 2,
      ExternalCheckNumber: externalCheckNumber,
      ExternalOrderNumber: request.orderId,
    },
  };
}

const errorSchema = z.object({ Code: z.number(), Text: z.string().nullish() });

export const checkDataSchema = z.object({
  CheckNumber: z.union([z.string(), z.number()]).transform(String),
  DateTime: z.string(),
  OfflineMode: z.boolean().nullish(),
  CashboxOfflineMode: z.boolean().nullish(),
  TicketUrl: z.string().nullish(),
  Cashbox: z.object({ RegistrationNumber: z.union([z.string(), z.number()]).transform(String).nullish() }).nullish(),
});

export type CheckData = z.infer<typeof checkDataSchema>;

/** Any Webkassa answer: Data (of any shape) and/or Errors. */
export const envelopeSchema = z.object({
  Data: z.unknown().optional(),
  Errors: z.array(errorSchema).nullish(),
});

export function firstError(body: unknown): { code: number; text: string } | null {
  const parsed = envelopeSchema.safeParse(body);
  const error = parsed.success ? parsed.data.Errors?.[0] : undefined;
  return error ? { code: error.Code, text: error.Text ?? '(no text)' } : null;
}

export const tokenDataSchema = z.object({ Token: z.string().min(1) });

export const cashboxesDataSchema = z.object({
  List: z.array(
    z
      .object({
        UniqueNumber: z.string(),
        RegistrationNumber: z.union([z.string(), z.number()]).transform(String).nullish(),
        IsActive: z.boolean().nullish(),
        IsOffline: z.boolean().nullish(),
      })
      .passthrough(),
  ),
});
