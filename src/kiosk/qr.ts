/** qrcode (and the PNG encoder it requires) loads on the first QR, not at start-up: start-up to ready stays short. */
import { qrSegments } from './qr-segments.js';

type Qrcode = typeof import('qrcode');
// The same shape as qr-segments.ts's QrSegment, whose mode is one field rather than three variants.
type QRCodeSegment = import('qrcode').QRCodeSegment;
let qrcode: Promise<Qrcode> | null = null;
/**
 * qrcode is CommonJS: Node's own loader gives its functions as named exports, the bundle's chunks
 * only as `default` (its module.exports), so the functions are taken from `default` when it has them.
 */
export const loadQrcode = (): Promise<Qrcode> =>
  (qrcode ??= import('qrcode').then((module) => ((module as { default?: Qrcode }).default ?? module) as Qrcode));

/** Renders pay URLs as QR SVGs. The same URL is asked for on every state push, so results are cached. */
export interface QrRenderer {
  svg(url: string): Promise<string>;
}

/** Few orders are on screen at once; a small cache keeps memory flat on a Pi Zero. */
const DEFAULT_CACHE_ENTRIES = 16;
export const QUIET_ZONE_MODULES = 4;

export function createQrRenderer(maxEntries = DEFAULT_CACHE_ENTRIES): QrRenderer {
  const cache = new Map<string, Promise<string>>();
  return {
    svg(url) {
      const hit = cache.get(url);
      if (hit) {
        // Re-insert so the Map's insertion order doubles as least-recently-used order.
        cache.delete(url);
        cache.set(url, hit);
        return hit;
      }
      // ISO/IEC 18004 asks for a quiet zone of 4 modules: phone cameras find the code faster. The
      // segments are chosen here (qr-segments.ts): qrcode's own search allocated ~380 KB per code.
      const rendered = loadQrcode().then((module) =>
        module.toString(qrSegments(url) as QRCodeSegment[], { type: 'svg', margin: QUIET_ZONE_MODULES }),
      );
      cache.set(url, rendered);
      rendered.catch(() => cache.delete(url));
      while (cache.size > maxEntries) {
        const oldest = cache.keys().next().value;
        if (oldest === undefined) break;
        cache.delete(oldest);
      }
      return rendered;
    },
  };
}
