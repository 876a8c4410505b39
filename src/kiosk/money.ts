/**
 * Tugrik and tenge are charged in whole units although ISO 4217 gives them two decimals; amounts
 * in these currencies are whole units, every other currency is in its ISO minor unit.
 * The page (public/app.js) applies the same rule.
 */
const WHOLE_UNIT_CURRENCIES = new Set(['MNT', 'KZT']);

export function formatAmount(amount: number, currency: string, locale = 'en-GB'): string {
  try {
    const iso = new Intl.NumberFormat(locale, { style: 'currency', currency }).resolvedOptions();
    const digits = WHOLE_UNIT_CURRENCIES.has(currency) ? 0 : (iso.maximumFractionDigits ?? 2);
    return new Intl.NumberFormat(locale, {
      style: 'currency',
      currency,
      currencyDisplay: 'narrowSymbol',
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    }).format(amount / 10 ** digits);
  } catch {
    // An unknown currency code must not take the page down: show the raw figure and code.
    return `${amount} ${currency}`;
  }
}
