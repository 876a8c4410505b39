// Words and money on the customer's screen: one dictionary per language (i18n/<lang>.json),
// loaded on demand; English fills any gap while another language is still on its way.

const LOCALES = { mn: 'mn-MN', kk: 'kk-KZ', ru: 'ru-RU', en: 'en-GB' };
// Same rule as src/kiosk/money.ts: tugrik and tenge are charged in whole units.
const WHOLE_UNIT_CURRENCIES = new Set(['MNT', 'KZT']);
const dictionaries = {};

export function hasDictionary(lang) {
  return Boolean(dictionaries[lang]);
}

export async function loadDictionary(lang) {
  if (dictionaries[lang]) return;
  const res = await fetch(`/i18n/${lang}.json`);
  if (!res.ok) throw new Error(`i18n ${lang}: ${res.status}`);
  dictionaries[lang] = await res.json();
}

/** The text for `key`, with {placeholders} filled. The result goes into textContent, never markup. */
export function translate(lang, key, vars = {}) {
  const text = dictionaries[lang]?.[key] ?? dictionaries.en?.[key] ?? '';
  return text.replace(/\{(\w+)\}/g, (_, name) => String(vars[name] ?? ''));
}

export function formatMoney(amount, currency, lang) {
  try {
    const locale = LOCALES[lang] ?? LOCALES.en;
    const iso = new Intl.NumberFormat(locale, { style: 'currency', currency }).resolvedOptions();
    const digits = WHOLE_UNIT_CURRENCIES.has(currency) ? 0 : iso.maximumFractionDigits;
    return new Intl.NumberFormat(locale, {
      style: 'currency',
      currency,
      currencyDisplay: 'narrowSymbol',
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    }).format(amount / 10 ** digits);
  } catch {
    // An unknown currency code must not blank the screen.
    return `${amount} ${currency}`;
  }
}
