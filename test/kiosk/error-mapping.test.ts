import { describe, expect, it } from 'vitest';
import { createFakeKioskDeps } from '../fakes/kiosk-deps.js';
import { kioskForInject } from './harness.js';
import { ErrorCodes, VendgateError } from '../../src/util/index.js';

describe('errors from the order service reach the page as { error: { code, message } }', () => {
  it.each([
    [ErrorCodes.UNKNOWN_SLOT, 400, 'slot Z9 is not in the catalog'],
    [ErrorCodes.DEVICE_BUSY, 409, 'an order is already open'],
    [ErrorCodes.OUT_OF_SERVICE, 503, 'the machine is out of service'],
    [ErrorCodes.PROVIDER_UNAVAILABLE, 503, 'the payment provider did not answer'],
    [ErrorCodes.PROVIDER_REJECTED, 502, 'the payment provider refused the invoice'],
    [ErrorCodes.IDEMPOTENCY_CONFLICT, 502, 'the payment provider refused the order; the operator has been alerted'],
    [ErrorCodes.INVOICE_MISMATCH, 502, 'the payment provider returned an unexpected invoice; the operator has been alerted'],
    [ErrorCodes.SOLD_OUT, 409, 'slot A1 is sold out; please choose another product'],
    [ErrorCodes.SLOT_JAMMED, 409, 'slot A1 is out of order (jammed); please choose another product'],
  ])('maps %s to HTTP %i with its code and message', async (code, status, message) => {
    const deps = createFakeKioskDeps();
    deps.createImpl = async () => {
      // The throw site names only the code; its status comes from util/errors.ts.
      throw new VendgateError(code, message);
    };
    const res = await kioskForInject(deps).inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A1' } });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual({ error: { code, message } });
  });

  it('maps a cancel that is too late to 409 VG_ERR_ORDER_STATE', async () => {
    const deps = createFakeKioskDeps();
    deps.orders.cancel = async () => {
      throw new VendgateError(ErrorCodes.ORDER_STATE, 'order 1 is paid and can no longer be canceled');
    };
    const res = await kioskForInject(deps).inject({
      method: 'POST',
      url: '/api/orders/1/cancel',
      headers: { 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ error: { code: 'VG_ERR_ORDER_STATE', message: 'order 1 is paid and can no longer be canceled' } });
  });

  it('answers an unexpected error with a bare 500 and no stack trace or internal message', async () => {
    const deps = createFakeKioskDeps();
    deps.createImpl = async () => {
      throw new TypeError("Cannot read properties of undefined (reading 'secretKey')");
    };
    const server = kioskForInject(deps);
    const res = await server.inject({ method: 'POST', url: '/api/orders', payload: { slot: 'A1' } });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: { code: 'VG_ERR_INTERNAL', message: 'internal error' } });
    expect(res.body).not.toMatch(/secretKey|TypeError|at .*\.ts/);
  });

  it('answers 500 the same way when reading the state throws', async () => {
    const deps = createFakeKioskDeps();
    deps.state = () => {
      throw new Error('SQLITE_BUSY: database is locked');
    };
    const res = await kioskForInject(deps).inject({ method: 'GET', url: '/api/state' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: { code: 'VG_ERR_INTERNAL', message: 'internal error' } });
  });
});
