/**
 * The taxes inside a tax-inclusive amount, in integer minor units.
 *
 * Mongolia's receipt amounts include every tax: a price is net + VAT + city tax, where VAT is 10 %
 * of the net amount (for a merchant registered as a VAT payer) and the capital city tax is 2 % of the
 * net amount (for a merchant registered for it, in Ulaanbaatar). So a 2,800 price of a merchant
 * registered for both is 2,500 net + 250 VAT + 50 city tax; with VAT only, 2,750 → 2,500 + 250;
 * with city tax only, 2,550 → 2,500 + 50; with neither, everything is net.
 *
 * Rounding rule: each tax is computed from the whole amount in one division and rounded half up to
 * a whole minor unit (`vat = round(total × 10 / (100 + 10 + 2))`); the net amount is what is left
 * (`net = total − vat − cityTax`). The three parts therefore always sum exactly to the total, and each
 * tax is within half a minor unit of its exact value. Several lines are split line by line (a register
 * checks each item) and the sums are the sums of the lines' parts, never a split of the sum.
 *
 * Kazakhstan's VAT (16 % since 2026, 12 % before; inside the price where the merchant is a VAT payer,
 * no city tax) is the same rule with other rates: `splitTax(total, registration, KZ_RATES)`.
 */

export interface TaxRegistration {
  /** The merchant is registered as a VAT payer. */
  vatPayer: boolean;
  /** The merchant is registered for the capital city tax (Ulaanbaatar). */
  cityTax: boolean;
}

/** Percentages of the net amount. */
export interface TaxRates {
  vatPercent: number;
  cityTaxPercent: number;
}

export const MN_RATES: Readonly<TaxRates> = Object.freeze({ vatPercent: 10, cityTaxPercent: 2 });
export const KZ_RATES: Readonly<TaxRates> = Object.freeze({ vatPercent: 16, cityTaxPercent: 0 });

export interface TaxSplit {
  total: number;
  net: number;
  vat: number;
  cityTax: number;
}

/** Amounts above this are refused: the integer arithmetic below stays exact up to it. */
export const MAX_TAXABLE_AMOUNT = 1e12;

/** The parts of one tax-inclusive amount. Throws RangeError for an amount that is not a whole, non-negative number. */
export function splitTax(total: number, registration: TaxRegistration, rates: TaxRates = MN_RATES): TaxSplit {
  if (!Number.isSafeInteger(total) || total < 0 || total > MAX_TAXABLE_AMOUNT) {
    throw new RangeError(`a taxable amount must be a whole number of minor units 0..${MAX_TAXABLE_AMOUNT}, got ${String(total)}`);
  }
  checkRates(rates);
  const vatPercent = registration.vatPayer ? rates.vatPercent : 0;
  const cityPercent = registration.cityTax ? rates.cityTaxPercent : 0;
  const divisor = 100 + vatPercent + cityPercent;
  const vat = roundedShare(total, vatPercent, divisor);
  const cityTax = roundedShare(total, cityPercent, divisor);
  return { total, net: total - vat - cityTax, vat, cityTax };
}

/** Each line split on its own, and the sums of their parts. */
export function splitLines(
  totals: readonly number[],
  registration: TaxRegistration,
  rates: TaxRates = MN_RATES,
): { lines: TaxSplit[]; sum: TaxSplit } {
  const lines = totals.map((total) => splitTax(total, registration, rates));
  const sum = lines.reduce<TaxSplit>(
    (acc, line) => ({
      total: acc.total + line.total,
      net: acc.net + line.net,
      vat: acc.vat + line.vat,
      cityTax: acc.cityTax + line.cityTax,
    }),
    { total: 0, net: 0, vat: 0, cityTax: 0 },
  );
  return { lines, sum };
}

/** round_half_up(total × percent / divisor) in integers: floor((2·total·percent + divisor) / (2·divisor)). */
function roundedShare(total: number, percent: number, divisor: number): number {
  if (percent === 0) return 0;
  return Math.floor((2 * total * percent + divisor) / (2 * divisor));
}

function checkRates(rates: TaxRates): void {
  for (const [name, value] of Object.entries(rates)) {
    if (!Number.isInteger(value) || value < 0 || value > 100)
      throw new RangeError(`${name} must be a whole percentage 0..100, got ${String(value)}`);
  }
}
