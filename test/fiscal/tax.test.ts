import { describe, expect, it } from 'vitest';
import { KZ_RATES, MAX_TAXABLE_AMOUNT, splitLines, splitTax } from '../../src/fiscal/tax.js';

const BOTH = { vatPayer: true, cityTax: true };
const VAT_ONLY = { vatPayer: true, cityTax: false };
const CITY_ONLY = { vatPayer: false, cityTax: true };
const NEITHER = { vatPayer: false, cityTax: false };

describe('splitTax', () => {
  it.each([
    [
      'splits the documented example: 2,800 with VAT and city tax is 2,500 + 250 VAT + 50 city tax',
      2800,
      BOTH,
      { net: 2500, vat: 250, cityTax: 50 },
    ],
    ['splits the manual example of one item: 1,120 is 1,000 + 100 VAT + 20 city tax', 1120, BOTH, { net: 1000, vat: 100, cityTax: 20 }],
    ['takes only VAT from a VAT payer without city tax', 2750, VAT_ONLY, { net: 2500, vat: 250, cityTax: 0 }],
    ['takes only city tax from a merchant that is not a VAT payer', 2550, CITY_ONLY, { net: 2500, vat: 0, cityTax: 50 }],
    ['leaves everything net for a merchant registered for neither', 2800, NEITHER, { net: 2800, vat: 0, cityTax: 0 }],
  ] as const)('%s', (_title, total, registration, parts) => {
    expect(splitTax(total, registration)).toEqual({ total, ...parts });
  });

  it('rounds each tax half up from the whole amount: 1,000 is 89.29 VAT → 89 and 17.86 city tax → 18', () => {
    expect(splitTax(1000, BOTH)).toEqual({ total: 1000, net: 893, vat: 89, cityTax: 18 });
    // 56 × 10 / 112 = 5 exactly; 28 × 10 / 112 = 2.5 → 3 (half up)
    expect(splitTax(56, BOTH).vat).toBe(5);
    expect(splitTax(28, BOTH).vat).toBe(3);
  });

  it('keeps the parts summing to the total and each tax within half a unit of its exact value, for every amount 0..5,000', () => {
    for (const registration of [BOTH, VAT_ONLY, CITY_ONLY, NEITHER]) {
      const divisor = 100 + (registration.vatPayer ? 10 : 0) + (registration.cityTax ? 2 : 0);
      for (let total = 0; total <= 5000; total += 1) {
        const split = splitTax(total, registration);
        expect(split.net + split.vat + split.cityTax).toBe(total);
        expect(split.net).toBeGreaterThanOrEqual(0);
        const exactVat = registration.vatPayer ? (total * 10) / divisor : 0;
        const exactCity = registration.cityTax ? (total * 2) / divisor : 0;
        expect(Math.abs(split.vat - exactVat)).toBeLessThanOrEqual(0.5);
        expect(Math.abs(split.cityTax - exactCity)).toBeLessThanOrEqual(0.5);
      }
    }
  });

  it('works in hundredths as well: 1,000.00 is 892.85 net + 89.29 VAT + 17.86 city tax, in hundredths', () => {
    expect(splitTax(100_000, BOTH)).toEqual({ total: 100_000, net: 89_285, vat: 8_929, cityTax: 1_786 });
  });

  it('splits a Kazakh price with 16 % VAT inside it, and 12 % where a register still wants the old rate', () => {
    expect(splitTax(1160, VAT_ONLY, KZ_RATES)).toEqual({ total: 1160, net: 1000, vat: 160, cityTax: 0 });
    expect(splitTax(1160, BOTH, KZ_RATES).cityTax).toBe(0);
    expect(splitTax(1120, VAT_ONLY, { vatPercent: 12, cityTaxPercent: 0 }).vat).toBe(120);
  });

  it('refuses an amount that is negative, fractional, not a number or too large', () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_TAXABLE_AMOUNT + 1]) {
      expect(() => splitTax(bad, BOTH)).toThrow(RangeError);
    }
    expect(() => splitTax(100, BOTH, { vatPercent: 10.5, cityTaxPercent: 2 })).toThrow(/vatPercent/);
  });
});

describe('splitLines', () => {
  it('splits each line on its own and sums the parts, so the sums equal the lines and the total', () => {
    const { lines, sum } = splitLines([1000, 1000, 2800], BOTH);
    expect(lines.map((l) => l.vat)).toEqual([89, 89, 250]);
    expect(sum).toEqual({ total: 4800, net: 893 + 893 + 2500, vat: 428, cityTax: 18 + 18 + 50 });
    expect(sum.net + sum.vat + sum.cityTax).toBe(4800);
  });

  it('differs from splitting the sum where rounding does, and says so: the lines decide', () => {
    // 3 × 1,000 split per line is 267 VAT; 3,000 split at once would be 268.
    expect(splitLines([1000, 1000, 1000], BOTH).sum.vat).toBe(267);
    expect(splitTax(3000, BOTH).vat).toBe(268);
  });

  it('gives zero sums for no lines', () => {
    expect(splitLines([], BOTH).sum).toEqual({ total: 0, net: 0, vat: 0, cityTax: 0 });
  });
});
