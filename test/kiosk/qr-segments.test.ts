import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import QRCode from 'qrcode';
import { qrSegments } from '../../src/kiosk/qr-segments.js';
import { decodeQrSvg } from './qr-svg.js';

type Segments = Parameters<typeof QRCode.create>[0];
const ALPHANUMERIC = /^[0-9A-Z $%*+\-./:]*$/;

/** What a phone is shown: pay URLs of each rail, QPay's and an EMV merchant-presented QR text, Cyrillic. */
const SHOWN = [
  'http://127.0.0.1:8080/sandbox/pay/sb_1',
  'http://192.168.1.23:41234/sandbox/pay/pi_8SkmTXYUsgHNfihvn5wcFwx1',
  'https://pay.gerege.mn/i/pi_3F0YMySmmavaTPcBBVx9gTfn?ref=vm-001-7f3a2c-42-505f73f4',
  'https://qutpay.example/pay/qp_1234567890123456?lang=mn',
  'https://pay.kaspi.kz/pay/9a8b7c6d-1234-4f00-9abc-1234567890ab',
  '0002010102121531279404962794049600000002000000000052045411530349654041500.005802MN5913VENDGATE VM 016009ULAANBAATAR62240520bench-act-c5a37e-16163048D2F',
  '00020101021229370016A000000677010111011300660000000005802TH530376454061000.006304B8C1',
  `https://pay.example.mn/i/pi_${'x'.repeat(120)}?ref=vm-test-1-1&lang=mn`,
  'Төлбөр 1500₮ — Улаанбаатар',
  '1234567890'.repeat(30),
  'HTTPS://EXAMPLE.MN/PAY/ABC123',
];

/** The version (size) qrcode picks for the text, with its own segmenting or with these segments. */
const version = (data: string | Segments) => QRCode.create(data as Segments, { errorCorrectionLevel: 'M' }).version;

describe('qrSegments: the segments of a QR text', () => {
  it('joins back to the text, and every segment holds only what its mode can carry', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc.stringMatching(/^[0-9A-Za-z:/.?=&_-]{0,300}$/),
          fc.string({ unit: 'grapheme', maxLength: 80 }),
        ),
        (text) => {
          const segments = qrSegments(text);
          expect(segments.map((segment) => segment.data).join('')).toBe(text);
          for (const segment of segments) {
            if (segment.mode === 'numeric') expect(segment.data).toMatch(/^[0-9]+$/);
            if (segment.mode === 'alphanumeric') expect(segment.data).toMatch(ALPHANUMERIC);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("never makes a code larger than qrcode's own search does, on what a phone is shown and on any text", () => {
    for (const text of SHOWN) expect(version(qrSegments(text) as Segments), text).toBeLessThanOrEqual(version(text));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.stringMatching(/^[0-9]{1,400}$/),
          fc.stringMatching(/^[0-9A-Z $%*+\-./:]{1,400}$/),
          fc.stringMatching(/^[0-9A-Za-z:/.?=&_-]{1,400}$/),
          fc
            .array(fc.constantFrom('0', '7', 'A', 'Z', 'a', ':', '/', 'ө', '₮'), { minLength: 1, maxLength: 300 })
            .map((chars) => chars.join('')),
        ),
        (text) => {
          expect(version(qrSegments(text) as Segments)).toBeLessThanOrEqual(version(text));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is read back by a QR decoder as exactly the text', async () => {
    for (const text of SHOWN) {
      const svg = await QRCode.toString(qrSegments(text) as Segments, { type: 'svg', margin: 4 });
      expect(decodeQrSvg(svg), text).toBe(text);
    }
  });

  it('puts a long run of digits in numeric, a long run of ISO 18004 alphanumerics in alphanumeric, and a lowercase URL in bytes', () => {
    expect(qrSegments('1234567890'.repeat(30))).toEqual([{ data: '1234567890'.repeat(30), mode: 'numeric' }]);
    expect(qrSegments('https://pay.gerege.mn/i/pi_abcdef')).toEqual([{ data: 'https://pay.gerege.mn/i/pi_abcdef', mode: 'byte' }]);
    // 18 characters of the alphanumeric set: 99 bits instead of 144, worth the two segment headers.
    expect(qrSegments('http://127.0.0.1:8080/sandbox/pay/sb_1')).toEqual([
      { data: 'http', mode: 'byte' },
      { data: '://127.0.0.1:8080/', mode: 'alphanumeric' },
      { data: 'sandbox/pay/sb_1', mode: 'byte' },
    ]);
    expect(qrSegments('')).toEqual([{ data: '', mode: 'byte' }]);
  });
});
