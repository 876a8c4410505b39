// Money as a customer reads it, written once: the page imports this file (served as /money.js) and
// the server imports the same file (src/kiosk/index.ts, the sandbox pay page), so the two cannot
// drift apart. Plain JavaScript because the browser runs it as it is; money.d.ts gives it types.

/**
 * Tugrik and tenge are charged in whole units although ISO 4217 gives them two decimals: amounts in
 * these currencies are whole units, every other currency is in its ISO minor unit.
 */
export const WHOLE_UNIT_CURRENCIES = new Set(['MNT', 'KZT']);

/** `amount` (minor units, or whole units for the currencies above) as the locale writes it. */
export function formatAmount(amount, currency, locale = 'en-GB') {
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
