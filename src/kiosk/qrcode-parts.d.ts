// qrcode's own modules, imported one by one (src/kiosk/qr.ts): its index also loads the PNG encoder.
// Their shapes are those of qrcode 1.5's lib/core/qrcode.js and lib/renderer/*.js.
declare module 'qrcode/lib/core/qrcode.js' {
  import type { QRCode, QRCodeSegment } from 'qrcode';
  export function create(data: string | QRCodeSegment[], options?: { errorCorrectionLevel?: 'L' | 'M' | 'Q' | 'H' }): QRCode;
}
declare module 'qrcode/lib/renderer/svg-tag.js' {
  import type { QRCode } from 'qrcode';
  export function render(qrData: QRCode, options?: { margin?: number }): string;
}
declare module 'qrcode/lib/renderer/terminal.js' {
  import type { QRCode } from 'qrcode';
  export function render(qrData: QRCode, options?: { small?: boolean }): string;
}
