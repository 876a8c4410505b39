import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { ReceiptRequest, SandboxRegister } from '../../src/fiscal/index.js';
import { createSandboxRegister, sandboxRegisterDbPath } from '../../src/fiscal/sandbox.js';
import { createManualClock } from '../../src/util/clock.js';
import { tempDir } from '../helpers/temp.js';

const request = (key: string, total = 1500): ReceiptRequest => ({
  key,
  orderId: `vm-1-${key}`,
  saleDate: '2026-11-29',
  soldAt: Date.UTC(2026, 10, 29),
  total,
  currency: 'MNT',
  lines: [{ name: 'Water', classificationCode: null, unit: null, quantity: 1, unitPrice: total }],
  payment: { provider: 'sandbox', invoiceId: 'inv_1' },
});

describe('sandbox fiscal register', () => {
  const dir = tempDir();
  const clock = createManualClock();
  let register: SandboxRegister;
  const open = (lotteryStock: number | null = null) =>
    createSandboxRegister({ clock }, { dbPath: sandboxRegisterDbPath(join(dir.path, 'vendgate.db')), lotteryStock });
  afterEach(async () => register.close());
  afterAll(() => dir.cleanup());

  it('lives in fiscal-sandbox.db beside the database', () => {
    expect(sandboxRegisterDbPath('/var/lib/vendgate/vendgate.db')).toBe('/var/lib/vendgate/fiscal-sandbox.db');
    register = open();
  });

  it('is idempotent by key: a repeated key returns the receipt it made, and a restart keeps it', async () => {
    register = open();
    const first = await register.issue(request('k1'));
    const again = await register.issue(request('k1'));
    expect(first.kind).toBe('issued');
    expect(again).toEqual(first);
    await register.close();
    register = open();
    expect(await register.lookup(request('k1'))).toEqual({ kind: 'found', receipt: first.kind === 'issued' ? first.receipt : null });
    expect(await register.lookup(request('never'))).toEqual({ kind: 'absent' });
    expect(register.held().filter((r) => r.key === 'k1')).toHaveLength(1);
  });

  it('records every call that presents a key it already holds (repeats), sale or return, but not a first call or a new key', async () => {
    const openOwn = () => createSandboxRegister({ clock }, { dbPath: join(dir.path, 'repeats', 'fiscal-sandbox.db') });
    register = openOwn();
    const sale = await register.issue(request('r1'));
    if (sale.kind !== 'issued') throw new Error('expected issued');
    expect(register.repeats()).toEqual([]);
    await register.issue(request('r1'));
    await register.returnReceipt(sale.receipt, request('r1'), 'r1-return');
    await register.returnReceipt(sale.receipt, request('r1'), 'r1-return');
    // A second receipt for the same sale under a new key is no repeat: it is a second receipt, in held().
    await register.issue({ ...request('r1'), key: 'r1-again' });
    expect(register.repeats().map((r) => [r.key, r.kind, r.order_id])).toEqual([
      ['r1', 'sale', 'vm-1-r1'],
      ['r1-return', 'return', 'vm-1-r1'],
    ]);
    expect(register.held().filter((r) => r.order_id === 'vm-1-r1' && r.kind === 'sale')).toHaveLength(2);
    await register.close();
    register = openOwn();
    expect(register.repeats()).toHaveLength(2);
  });

  it('refuses a return of a receipt it does not hold, and a second return of one it does', async () => {
    register = open();
    const unknown = await register.returnReceipt(
      { registerId: 'SBX-nope', registerDate: '2026-11-29 12:00:00', qrData: null, lottery: null, offline: false },
      request('k2'),
      'k2-return',
    );
    expect(unknown).toMatchObject({ kind: 'rejected', code: 'unknown_receipt' });
    const sale = await register.issue(request('k3'));
    if (sale.kind !== 'issued') throw new Error('expected issued');
    expect((await register.returnReceipt(sale.receipt, request('k3'), 'k3-return')).kind).toBe('issued');
    expect((await register.returnReceipt(sale.receipt, request('k3'), 'k3-return')).kind).toBe('issued');
    expect(await register.returnReceipt(sale.receipt, request('k3'), 'k3-return-again')).toMatchObject({
      kind: 'rejected',
      code: 'already_returned',
    });
  });

  it('faults: an outage is unavailable (lookup unknown), a lost answer committed, a timeout did not', async () => {
    register = open();
    register.faults.outageUntil(clock.now() + 1_000);
    expect((await register.issue(request('k4'))).kind).toBe('unavailable');
    expect((await register.lookup(request('k4'))).kind).toBe('unknown');
    expect((await register.status()).reachable).toBe(false);
    clock.advance(1_000);
    register.faults.loseNextAnswers(1);
    expect((await register.issue(request('k4'))).kind).toBe('unknown');
    expect((await register.lookup(request('k4'))).kind).toBe('found');
    register.faults.timeOutNext(1);
    expect((await register.issue(request('k5'))).kind).toBe('unknown');
    expect((await register.lookup(request('k5'))).kind).toBe('absent');
  });

  it('hands out lottery numbers until they run out, and says how many are left', async () => {
    await createSandboxRegister({ clock }, { dbPath: join(dir.path, 'lottery', 'fiscal-sandbox.db'), lotteryStock: 1 }).close();
    register = createSandboxRegister({ clock }, { dbPath: join(dir.path, 'lottery', 'fiscal-sandbox.db'), lotteryStock: 1 });
    const one = await register.issue(request('l1'));
    const two = await register.issue(request('l2'));
    expect(one.kind === 'issued' && one.receipt.lottery).toMatch(/^SB /);
    expect(two.kind === 'issued' && two.receipt.lottery).toBeNull();
    expect((await register.status()).lotteryLeft).toBe(0);
  });
});
