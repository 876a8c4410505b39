import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CommandErrorCodes } from '../../src/mqtt/index.js';
import { ERROR_HTTP_STATUS, ErrorCodes, VendgateError, httpStatusOf, type ErrorCode } from '../../src/util/index.js';

describe('every error code has exactly one HTTP status, decided in util/errors.ts', () => {
  const codes = Object.values(ErrorCodes);

  it('lists each code once, and the status table has exactly those codes', () => {
    expect(new Set(codes).size).toBe(codes.length);
    expect(Object.keys(ERROR_HTTP_STATUS).sort()).toEqual([...codes].sort());
  });

  it.each(codes)('%s maps to one 4xx or 5xx status, and a VendgateError of it carries that status', (code) => {
    const status = httpStatusOf(code);
    expect(Number.isInteger(status) && status >= 400 && status < 600).toBe(true);
    expect(new VendgateError(code, 'x').httpStatus).toBe(status);
  });

  it('keeps the statuses clients see (the kiosk page and docs/errors.md rely on them)', () => {
    const seen: Partial<Record<ErrorCode, number>> = {
      VG_ERR_BAD_REQUEST: 400,
      VG_ERR_UNKNOWN_SLOT: 400,
      VG_ERR_FORBIDDEN: 403,
      VG_ERR_ORDER_NOT_FOUND: 404,
      VG_ERR_DEVICE_BUSY: 409,
      VG_ERR_ORDER_STATE: 409,
      VG_ERR_SOLD_OUT: 409,
      VG_ERR_SLOT_JAMMED: 409,
      VG_ERR_RATE_LIMITED: 429,
      VG_ERR_INTERNAL: 500,
      VG_ERR_PROVIDER_REJECTED: 502,
      VG_ERR_IDEMPOTENCY_CONFLICT: 502,
      VG_ERR_INVOICE_MISMATCH: 502,
      VG_ERR_OUT_OF_SERVICE: 503,
      VG_ERR_PROVIDER_UNAVAILABLE: 503,
      VG_ERR_STARTING: 503,
      VG_ERR_WEBHOOK_SIGNATURE: 400,
      VG_ERR_WEBHOOK_MALFORMED: 400,
    };
    for (const [code, status] of Object.entries(seen)) expect(httpStatusOf(code as ErrorCode), code).toBe(status);
  });

  it('takes the status from the code even when a caller smuggles another one past the types', () => {
    const options = { httpStatus: 503 } as unknown as { details: Record<string, unknown> };
    expect(new VendgateError(ErrorCodes.DEVICE_BUSY, 'busy', options).httpStatus).toBe(409);
  });

  it('does not compile a throw site that names a status at all: the code is the status', () => {
    // @ts-expect-error a throw site passes the code, a message and details; never a status.
    const wrong = new VendgateError(ErrorCodes.DEVICE_BUSY, 'busy', { httpStatus: 503 });
    expect(wrong.httpStatus).toBe(409);
  });

  it('lists the MQTT command result codes in the same table', () => {
    for (const code of Object.values(CommandErrorCodes)) expect(Object.keys(ERROR_HTTP_STATUS), code).toContain(code);
  });

  it('is the HTTP column of the error table in docs/errors.md', () => {
    const readme = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const documented = Object.fromEntries([...readme.matchAll(/^\| `(VG_ERR_[A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]));
    expect(documented).toEqual(ERROR_HTTP_STATUS);
  });
});
