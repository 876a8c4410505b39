import { describe, expect, it } from 'vitest';
import { mdbAppPerTest } from '../helpers/mdb-app.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The whole app with the real MDB profile on serialport's mock line: the machine asks to sell an
 * item, and what goes back on the wire is the answer the VMC gets.
 */
describe('an MDB machine asking for a sold-out item', () => {
  const start = mdbAppPerTest();

  it('is denied on the wire (C,STOP) and never becomes an order; an item in stock still does', async () => {
    const { mock, localUrl, ctx } = await start();
    const refill = await fetch(`${localUrl}/api/slots/A2/refill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"count":0}',
    });
    expect(refill.status).toBe(200);
    const mark = mock.written().length;
    mock.emit('c,STATUS,VEND,2500,A2\r\n');
    await waitFor(() => mock.written().slice(mark).includes('C,STOP\n'), { what: 'C,STOP for the sold-out item' });
    expect(ctx.orders.latest()).toBeUndefined();

    const next = mock.written().length;
    mock.emit('c,STATUS,VEND,1500,A1\r\n');
    const created = await waitFor(() => ctx.orders.latest()?.state === 'awaiting_payment' && ctx.orders.latest(), {
      what: 'an order for A1',
    });
    expect(created).toMatchObject({ source: 'mdb', slot: 'A1', amount: 1500 });
    expect(mock.written().slice(next)).not.toContain('C,STOP');
  });

  it('a jammed item is denied the same way', async () => {
    const { mock, ctx } = await start();
    ctx.catalog.slots.failed('A1', 'test jam');
    ctx.catalog.slots.failed('A1', 'test jam');
    ctx.catalog.slots.failed('A1', 'test jam');
    const mark = mock.written().length;
    mock.emit('c,STATUS,VEND,1500,A1\r\n');
    await waitFor(() => mock.written().slice(mark).includes('C,STOP\n'), { what: 'C,STOP for the jammed item' });
    expect(ctx.orders.latest()).toBeUndefined();
  });
});
