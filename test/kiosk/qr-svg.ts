import jsQRModule from 'jsqr';

type DecodeQr = (data: Uint8ClampedArray, width: number, height: number) => { data: string } | null;
// jsqr is CommonJS: under NodeNext its default export arrives as the module object's `default`.
const jsQR = ((jsQRModule as unknown as { default?: DecodeQr }).default ?? jsQRModule) as unknown as DecodeQr;

/**
 * Reads a QR code back out of the SVG that `qrcode` renders: the dark modules are one stroked path
 * of horizontal runs (`M x y.5 h n m dx dy h n …`). The runs are painted into a bitmap and decoded
 * with jsQR, so a test proves what a phone camera would read.
 */
export function decodeQrSvg(svg: string): string | null {
  const viewBox = /viewBox="0 0 (\d+) (\d+)"/.exec(svg);
  const path = /<path[^>]*stroke="#000000"[^>]*d="([^"]+)"/.exec(svg) ?? /<path[^>]*d="([^"]+)"[^>]*stroke=/.exec(svg);
  if (!viewBox || !path) throw new Error('not a qrcode SVG: no viewBox or no stroked path');
  const size = Number(viewBox[1]);
  const dark = Array.from({ length: size }, () => new Array<boolean>(size).fill(false));
  let x = 0;
  let y = 0;
  for (const [, command, args] of path[1]!.matchAll(/([MmHh])([^MmHh]*)/g)) {
    const numbers = args!
      .trim()
      .split(/[\s,]+|(?=-)/)
      .filter(Boolean)
      .map(Number);
    if (command === 'M') [x, y] = [numbers[0]!, numbers[1]!];
    else if (command === 'm') [x, y] = [x + numbers[0]!, y + numbers[1]!];
    else {
      const length = command === 'h' ? numbers[0]! : numbers[0]! - x;
      for (let column = x; column < x + length; column++) dark[Math.floor(y)]![column] = true;
      x += length;
    }
  }
  return decodeModules(dark);
}

/** Paints a module matrix with a 4-module quiet zone, 8 px per module, and decodes it. */
export function decodeModules(dark: boolean[][]): string | null {
  const scale = 8;
  const quiet = 4;
  const size = dark.length;
  const pixels = (size + 2 * quiet) * scale;
  const rgba = new Uint8ClampedArray(pixels * pixels * 4).fill(255);
  for (let row = 0; row < size; row++) {
    for (let column = 0; column < size; column++) {
      if (!dark[row]![column]) continue;
      for (let dy = 0; dy < scale; dy++) {
        for (let dx = 0; dx < scale; dx++) {
          const offset = (((row + quiet) * scale + dy) * pixels + (column + quiet) * scale + dx) * 4;
          rgba[offset] = rgba[offset + 1] = rgba[offset + 2] = 0;
        }
      }
    }
  }
  return jsQR(rgba, pixels, pixels)?.data ?? null;
}
