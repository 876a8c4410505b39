/**
 * Bank-app deep links (QPay's `urls[]`): what may be kept and shown. A link comes from the
 * provider's answer, so it is treated as untrusted text: only `https:` or an app scheme on the
 * allowed list, no credentials, bounded sizes, a name without control characters. Pure.
 */
export interface AppLink {
  name: string;
  link: string;
}

/** The most links kept per invoice, and the longest name and link. */
export const APP_LINKS_MAX = 16;
const NAME_MAX = 40;
const LINK_MAX = 2_048;
/** Never a link, whatever a list says: they run code or read local data in the page. */
const NEVER = new Set(['javascript', 'data', 'vbscript', 'file', 'blob', 'about', 'http', 'ftp', 'ws', 'wss', 'chrome', 'intent']);

/**
 * The app schemes of Mongolian bank and wallet apps that QPay's deep links use (`<scheme>://q?qPay_QRcode=…`),
 * as published by QPay's merchants' integrations; `kiosk.appLinkSchemes` replaces the list.
 */
export const DEFAULT_APP_LINK_SCHEMES: readonly string[] = [
  'khanbank',
  'statebank',
  'tdbbank',
  'xacbank',
  'most',
  'nibank',
  'ckbank',
  'capitronbank',
  'bogdbank',
  'transbank',
  'mbank',
  'ardapp',
  'socialpay-payment',
  'qpaywallet',
  'monpay',
  'toki',
  'hipay',
];

/** Keep every app scheme but the never-allowed ones (what is stored; the kiosk's list decides what is shown). */
export const ANY_APP_SCHEME = 'any';

/** The scheme of `link` (lower case, without `:`), or null when it is no absolute URL. */
function schemeOf(link: string): string | null {
  const match = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(link);
  return match?.[1] ? match[1].toLowerCase() : null;
}

/**
 * The links that may be shown: https, or an app scheme in `schemes`; each name cleaned and bounded.
 * Anything else is dropped, silently: a provider's odd link is no reason to refuse its invoice.
 */
export function safeAppLinks(input: unknown, schemes: readonly string[] | typeof ANY_APP_SCHEME = DEFAULT_APP_LINK_SCHEMES): AppLink[] {
  if (!Array.isArray(input)) return [];
  const allowed = schemes === ANY_APP_SCHEME ? null : new Set(schemes.map((s) => s.toLowerCase()));
  const out: AppLink[] = [];
  for (const item of input) {
    if (out.length >= APP_LINKS_MAX) break;
    if (item === null || typeof item !== 'object') continue;
    const { name, link } = item as { name?: unknown; link?: unknown };
    if (typeof name !== 'string' || typeof link !== 'string' || link.length > LINK_MAX) continue;
    // Control characters, bidi overrides and the like out of the name; it is shown as text only.
    const clean = name
      .replace(/[\p{C}]/gu, '')
      .trim()
      .slice(0, NAME_MAX);
    const scheme = schemeOf(link);
    if (clean === '' || scheme === null || NEVER.has(scheme)) continue;
    if (scheme !== 'https' && allowed !== null && !allowed.has(scheme)) continue;
    if (/[\s<>"'`\\]/.test(link)) continue;
    let url: URL;
    try {
      url = new URL(link);
    } catch {
      continue;
    }
    if (url.username !== '' || url.password !== '') continue;
    if (scheme === 'https' && url.hostname === '') continue;
    out.push({ name: clean, link });
  }
  return out;
}

/** The stored JSON read back (null or a damaged column: none). */
export function readAppLinks(column: string | null, schemes?: readonly string[] | typeof ANY_APP_SCHEME): AppLink[] {
  if (column === null) return [];
  try {
    return safeAppLinks(JSON.parse(column), schemes);
  } catch {
    return [];
  }
}
