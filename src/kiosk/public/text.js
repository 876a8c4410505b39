// Words and money on the customer's screen: one dictionary per language (i18n/<lang>.json),
// loaded on demand; English fills any gap while another language is still on its way.

import { formatAmount } from './money.js';

const LOCALES = { mn: 'mn-MN', kk: 'kk-KZ', ru: 'ru-RU', en: 'en-GB' };
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

/** Money in the page's language (the rule itself is money.js, shared with the server). */
export function formatMoney(amount, currency, lang) {
  return formatAmount(amount, currency, LOCALES[lang] ?? LOCALES.en);
}
