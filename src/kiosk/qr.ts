/**
 * qrcode's encoder and the one renderer asked for, loaded on the first QR, not at start-up: start-up
 * to ready stays short. Not qrcode's index: it also loads its PNG renderer, and with it the pngjs
 * package and Node's zlib, which nothing here draws (test/app/bundle-mqtt-builtins.test.ts).
 */
import { qrSegments } from './qr-segments.js';

// The same shape as qr-segments.ts's QrSegment, whose mode is one field rather than three variants.
type QRCodeSegment = import('qrcode').QRCodeSegment;
type Encoder = typeof import('qrcode/lib/core/qrcode.js');
type SvgRenderer = typeof import('qrcode/lib/renderer/svg-tag.js');
type TerminalRenderer = typeof import('qrcode/lib/renderer/terminal.js');

/**
 * qrcode is CommonJS: Node's own loader gives its functions as named exports, the bundle's chunks
 * only as `default` (its module.exports), so the functions are taken from `default` when it has them.
 */
const commonJs = <T>(module: T): T => (module as { default?: T }).default ?? module;
let encoder: Promise<Encoder> | null = null;
let svgRenderer: Promise<SvgRenderer> | null = null;
const loadEncoder = (): Promise<Encoder> => (encoder ??= import('qrcode/lib/core/qrcode.js').then(commonJs));

/** The QR of `text` as an SVG element, with a quiet zone of `margin` modules. */
export async function qrSvg(text: string, margin: number): Promise<string> {
  svgRenderer ??= import('qrcode/lib/renderer/svg-tag.js').then(commonJs);
  const [{ create }, { render }] = await Promise.all([loadEncoder(), svgRenderer]);
  return render(create(qrSegments(text) as QRCodeSegment[]), { margin });
}

/** The QR of `text` drawn with half-block characters for a terminal (the demo's `vendgate start` on a TTY). */
export async function qrTerminal(text: string): Promise<string> {
  const [{ create }, { render }] = await Promise.all([loadEncoder(), import('qrcode/lib/renderer/terminal.js').then(commonJs)]);
  return render(create(text), { small: true });
}

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
      const rendered = qrSvg(url, QUIET_ZONE_MODULES);
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
