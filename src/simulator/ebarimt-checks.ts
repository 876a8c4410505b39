import type { CheckedReceipt, EbarimtMerchant } from './ebarimt-state.js';
import { SimHttpError } from './request-checks.js';

/**
 * The checks PosAPI's manual states for POST /rest/receipt, every problem named in one ERROR
 * answer: required fields and their formats, one sub-receipt per tax type with its items, the tax
 * inside each item (VAT 10 % and city tax 2 % of the net amount, per the merchant's registration,
 * within 0.01), sums of items, sub-receipts and payments equal to the totals. Field names are read
 * case-insensitively, as the daemon does (`totalVAT` and `totalVat` are the same field).
 */

const RECEIPT_TYPES = ['B2C_RECEIPT', 'B2B_RECEIPT', 'B2C_INVOICE', 'B2B_INVOICE'];
const TAX_TYPES = ['VAT_ABLE', 'VAT_FREE', 'VAT_ZERO', 'NO_VAT', 'NOT_VAT'];
/**
 * The manual lists CASH and PAYMENT_CARD; deployed clients also send BANK_TRANSFER and
 * wallet-specific codes (BANK_TRANSFER_QPAY, …), which the daemon takes: an upper-case code.
 */
const PAYMENT_CODE = /^[A-Z][A-Z0-9_]{1,39}$/;
const PAYMENT_STATUSES = ['PAID', 'PAY'];

type Obj = Record<string, unknown>;

export function checkReceiptBody(body: unknown, merchantOf: (tin: string) => EbarimtMerchant | undefined): CheckedReceipt {
  const problems: string[] = [];
  if (!isObj(body)) throw new SimHttpError(400, 'ERROR', 'the body must be a JSON object');
  const get = (o: Obj, name: string) => field(o, name);

  const text = (o: Obj, name: string, where: string, pattern?: RegExp, rule?: string): string => {
    const value = get(o, name);
    if (typeof value !== 'string' || value.trim() === '') {
      problems.push(`${where}${name}: required`);
      return '';
    }
    if (pattern && !pattern.test(value)) problems.push(`${where}${name}: ${rule}`);
    return value;
  };
  const cents = (o: Obj, name: string, where: string, required: boolean): number => {
    const value = get(o, name);
    if (value === undefined || value === null) {
      if (required) problems.push(`${where}${name}: required`);
      return 0;
    }
    const parsed = toCents(value);
    if (parsed === null) problems.push(`${where}${name}: must be a non-negative number with at most 2 decimals`);
    return parsed ?? 0;
  };

  const merchantTin = text(body, 'merchantTin', '', /^\d{11,14}$/, 'must be 11 to 14 digits');
  const merchant = merchantTin ? merchantOf(merchantTin) : undefined;
  if (merchantTin && !merchant) problems.push(`merchantTin: ${merchantTin} is not registered in this PosAPI`);
  // The manual writes the branch with 3 digits ("001"); the daemon takes "1" as well, as clients send it.
  text(body, 'branchNo', '', /^\d{1,3}$/, 'must be 1 to 3 digits');
  text(body, 'posNo', '');
  text(body, 'districtCode', '', /^\d{4}$/, 'must be 4 digits');
  // Optional: clients omit it (or send it empty) and the daemon numbers the receipt itself; one
  // that is sent must be unique within the day (ebarimt-state.ts).
  const suffixRaw = get(body, 'billIdSuffix');
  const billIdSuffix = suffixRaw === undefined || suffixRaw === null || suffixRaw === '' ? null : suffixRaw;
  if (billIdSuffix !== null && (typeof billIdSuffix !== 'string' || billIdSuffix.trim() === ''))
    problems.push('billIdSuffix: must be a string when given');
  const type = text(body, 'type', '');
  if (type && !RECEIPT_TYPES.includes(type)) problems.push(`type: must be one of ${RECEIPT_TYPES.join(', ')}`);
  const customerTin = get(body, 'customerTin');
  if (type.startsWith('B2B') && (typeof customerTin !== 'string' || customerTin === '')) problems.push('customerTin: required for B2B');
  if (type.startsWith('B2C') && typeof customerTin === 'string' && customerTin !== '') problems.push('customerTin: only for B2B');
  const inactiveRaw = get(body, 'inactiveId');
  const inactiveId = typeof inactiveRaw === 'string' && inactiveRaw !== '' ? inactiveRaw : null;
  const total = cents(body, 'totalAmount', '', true);
  const totalVat = cents(body, 'totalVAT', '', false);
  const totalCity = cents(body, 'totalCityTax', '', false);

  const subReceipts = get(body, 'receipts');
  let sumAmount = 0;
  let sumVat = 0;
  let sumCity = 0;
  if (!Array.isArray(subReceipts) || subReceipts.length === 0) problems.push('receipts: at least one sub-receipt is required');
  else {
    const seenTaxTypes = new Set<string>();
    subReceipts.forEach((sub: unknown, i) => {
      const where = `receipts[${i}].`;
      if (!isObj(sub)) return problems.push(`receipts[${i}]: must be an object`);
      const taxType = text(sub, 'taxType', where);
      if (taxType && !TAX_TYPES.includes(taxType)) problems.push(`${where}taxType: must be one of ${TAX_TYPES.join(', ')}`);
      if (seenTaxTypes.has(taxType)) problems.push(`${where}taxType: one sub-receipt per tax type (${taxType} twice)`);
      seenTaxTypes.add(taxType);
      const subTin = get(sub, 'merchantTin');
      if (subTin !== merchantTin) problems.push(`${where}merchantTin: must be the receipt's merchantTin`);
      const subAmount = cents(sub, 'totalAmount', where, true);
      const subVat = cents(sub, 'totalVAT', where, false);
      const subCity = cents(sub, 'totalCityTax', where, false);
      const items = get(sub, 'items');
      if (!Array.isArray(items) || items.length === 0) return problems.push(`${where}items: at least one item is required`);
      let a = 0;
      let v = 0;
      let c = 0;
      items.forEach((item: unknown, j) => {
        const at = `${where}items[${j}].`;
        if (!isObj(item)) return problems.push(`${at.slice(0, -1)}: must be an object`);
        text(item, 'name', at);
        text(item, 'measureUnit', at);
        text(item, 'classificationCode', at, /^\d{7}$/, 'must be 7 digits');
        if (taxType !== 'VAT_ABLE' && taxType !== '' && !get(item, 'taxProductCode'))
          problems.push(`${at}taxProductCode: required for ${taxType}`);
        const qty = get(item, 'qty');
        if (typeof qty !== 'number' || !(qty > 0)) problems.push(`${at}qty: must be a number above 0`);
        const unitPrice = cents(item, 'unitPrice', at, true);
        const amount = cents(item, 'totalAmount', at, true);
        const vat = cents(item, 'totalVAT', at, false);
        const city = cents(item, 'totalCityTax', at, false);
        if (typeof qty === 'number' && Math.abs(Math.round(qty * unitPrice) - amount) > 1)
          problems.push(`${at}totalAmount: must be qty × unitPrice (${(Math.round(qty * unitPrice) / 100).toFixed(2)})`);
        if (merchant) checkItemTaxes(at, taxType, merchant, amount, vat, city, problems);
        a += amount;
        v += vat;
        c += city;
      });
      if (a !== subAmount || v !== subVat || c !== subCity)
        problems.push(
          `${where}: totalAmount, totalVAT and totalCityTax must be the sums of its items (${money(a)}, ${money(v)}, ${money(c)})`,
        );
      sumAmount += subAmount;
      sumVat += subVat;
      sumCity += subCity;
    });
  }
  if (Array.isArray(subReceipts) && subReceipts.length > 0 && (sumAmount !== total || sumVat !== totalVat || sumCity !== totalCity))
    problems.push(
      `totalAmount, totalVAT and totalCityTax must be the sums of the sub-receipts (${money(sumAmount)}, ${money(sumVat)}, ${money(sumCity)})`,
    );

  const payments = get(body, 'payments');
  if (!Array.isArray(payments) || payments.length === 0) problems.push('payments: at least one payment is required');
  else {
    let paid = 0;
    payments.forEach((p: unknown, i) => {
      const where = `payments[${i}].`;
      if (!isObj(p)) return problems.push(`payments[${i}]: must be an object`);
      const code = text(p, 'code', where);
      if (code && !PAYMENT_CODE.test(code))
        problems.push(`${where}code: must be an upper-case payment code (CASH, PAYMENT_CARD, BANK_TRANSFER, BANK_TRANSFER_QPAY, …)`);
      const status = text(p, 'status', where);
      if (status && !PAYMENT_STATUSES.includes(status)) problems.push(`${where}status: must be one of ${PAYMENT_STATUSES.join(', ')}`);
      paid += cents(p, 'paidAmount', where, true);
    });
    if (paid !== total) problems.push(`payments: paidAmount must sum to totalAmount ${money(total)}, got ${money(paid)}`);
  }

  if (problems.length > 0) throw new SimHttpError(400, 'ERROR', problems.join('; '));
  return {
    merchantTin,
    billIdSuffix: typeof billIdSuffix === 'string' ? billIdSuffix : null,
    type,
    inactiveId,
    totalCents: total,
    vatCents: totalVat,
    cityTaxCents: totalCity,
  };
}

/** VAT 10 % and city tax 2 % of the net amount, each rounded to 0.01, must match within 0.01; no tax the merchant is not registered for. */
function checkItemTaxes(
  at: string,
  taxType: string,
  merchant: EbarimtMerchant,
  amount: number,
  vat: number,
  city: number,
  problems: string[],
) {
  const addVat = merchant.vatPayer && taxType === 'VAT_ABLE';
  const addCity = merchant.cityTax && taxType !== 'NO_VAT' && taxType !== 'NOT_VAT';
  const divisor = 100 + (addVat ? 10 : 0) + (addCity ? 2 : 0);
  const wantVat = addVat ? Math.round((amount * 10) / divisor) : 0;
  const wantCity = addCity ? Math.round((amount * 2) / divisor) : 0;
  if (Math.abs(wantVat - vat) > 1)
    problems.push(`${at}totalVAT: VAT is not 10 % of the net amount${addVat ? '' : ' (none is due)'}: expected ${money(wantVat)}`);
  if (Math.abs(wantCity - city) > 1)
    problems.push(
      `${at}totalCityTax: city tax is not 2 % of the net amount${addCity ? '' : ' (none is due)'}: expected ${money(wantCity)}`,
    );
}

/** A wire amount in hundredths, or null when it is not a non-negative number with at most 2 decimals. */
export function toCents(value: unknown): number | null {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return null;
  const scaled = n * 100;
  const rounded = Math.round(scaled);
  return Math.abs(scaled - rounded) < 1e-6 && Number.isSafeInteger(rounded) ? rounded : null;
}

function money(centsValue: number): string {
  return (centsValue / 100).toFixed(2);
}

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A field by case-insensitive name. */
function field(o: Obj, name: string): unknown {
  if (name in o) return o[name];
  const wanted = name.toLowerCase();
  for (const key of Object.keys(o)) if (key.toLowerCase() === wanted) return o[key];
  return undefined;
}
