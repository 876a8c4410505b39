import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runCli } from '../../src/cli/index.js';
import { fakeIo } from '../cli/cli-io.js';
import { buildFiscalCore, type FiscalHarness } from './harness.js';

/** The settings file a `vendgate` command run beside the harness's "service" reads: same device, same database. */
function configFile(h: FiscalHarness): string {
  const config = join(h.dir.path, 'config.yaml');
  writeFileSync(
    config,
    stringify({
      device: { id: h.settings.device.id, currency: 'MNT', catalog: h.settings.device.catalog },
      storage: { path: h.settings.storage.path },
      mqtt: { url: '' },
      fiscal: { register: 'sandbox' },
    }),
  );
  return config;
}

describe('vendgate resolve --vended with a fiscal register', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  it('writes the sale receipt row in the resolve transaction; the running service issues it', async () => {
    h = buildFiscalCore();
    h.machine.next = () => ({ result: 'unknown', detail: 'no answer' });
    const order = await h.sell();
    expect(order.state).toBe('vend_uncertain');
    const config = configFile(h);
    const { io, stdout, stderr } = fakeIo();
    expect(await runCli(['resolve', String(order.id), '--vended', '--config', config], io), stderr()).toBe(0);
    expect(stdout()).toMatch(/resolved as vended/);
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'queued', key: `${order.reference}-sale` }]);
    // The command wrote it on the machine's clock; the service's (manual) clock catches up.
    h.clock.set(Date.now() + 1_000);
    await h.pass();
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'issued' }]);
    expect(h.register.held()).toHaveLength(1);
  });
});

describe('vendgate receipt: a person settles a receipt the gateway cannot', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  async function cli(...args: string[]) {
    const { io, stdout, stderr } = fakeIo();
    const code = await runCli([...args, '--config', configFile(h)], io);
    return { code, stdout: stdout(), stderr: stderr() };
  }
  /** A sale whose receipt outcome stays unknown (as eBarimt's, whose PosAPI cannot be asked), with its alarm. */
  async function unknownSale() {
    const order = await h.sell();
    h.node.db.prepare("UPDATE receipts SET state = 'unknown', alarmed_at = 1 WHERE order_id = ?").run(order.id);
    h.node.outbox.raiseAlarm(`receipt_unknown/${order.id}`, 'critical', 'test', { orderId: order.id });
    return order;
  }

  it('--issued records the receipt the register shows (its id and date, for a later return) and clears the alarm', async () => {
    h = buildFiscalCore();
    const order = await unknownSale();
    const done = await cli(
      'receipt',
      String(order.id),
      '--issued',
      '--register-id',
      '000000000000000000000000000000042',
      '--register-date',
      '2026-12-02 10:00:00',
    );
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toMatch(/recorded as issued/);
    expect(h.receipts(order.id)).toMatchObject([{ kind: 'sale', state: 'issued', register_id: '000000000000000000000000000000042' }]);
    expect(h.alarms()).not.toContain(`receipt_unknown/${order.id}`);
    // Settled once: a second settle is refused and changes nothing.
    const again = await cli('receipt', String(order.id), '--not-issued');
    expect(again.code).toBe(64);
    expect(again.stderr).toMatch(/is issued: only an unknown or refused one/);
    expect(h.receipts(order.id)).toMatchObject([{ state: 'issued' }]);
  });

  it('--not-issued queues it again under the same key; the service issues one receipt', async () => {
    h = buildFiscalCore();
    const order = await h.sell();
    // The register refused it (a person fixed the cause); the register holds nothing.
    h.node.db.prepare("UPDATE receipts SET state = 'queued', next_at = ? WHERE order_id = ?").run(h.clock.now() + 3_600_000, order.id);
    h.node.db.prepare("UPDATE receipts SET state = 'rejected' WHERE order_id = ?").run(order.id);
    const done = await cli('receipt', String(order.id), '--not-issued');
    expect(done.code, done.stderr).toBe(0);
    expect(h.receipts(order.id)).toMatchObject([{ state: 'queued', key: `${order.reference}-sale` }]);
    await h.pass();
    expect(h.receipts(order.id)).toMatchObject([{ state: 'issued' }]);
    expect(h.register.held().filter((r) => r.key === `${order.reference}-sale`)).toHaveLength(1);
  });

  it('a refused sale settled after its order was refunded owes its return: queued with the settle, issued after the sale', async () => {
    h = buildFiscalCore();
    const order = await h.sell();
    h.node.db.prepare("UPDATE receipts SET state = 'rejected' WHERE order_id = ?").run(order.id);
    h.node.money.vend.refund(order.id, 'test');
    await h.node.money.refunds.run();
    expect(h.node.orderRepository.get(order.id)!.state).toBe('refunded');
    // The refund completed while the sale had no receipt: no return then.
    expect(h.receipts(order.id).map((r) => r.kind)).toEqual(['sale']);
    const done = await cli('receipt', String(order.id), '--not-issued');
    expect(done.code, done.stderr).toBe(0);
    expect(h.receipts(order.id)).toMatchObject([
      { kind: 'sale', state: 'queued' },
      { kind: 'return', state: 'queued', key: `${order.reference}-return` },
    ]);
    h.clock.set(Date.now() + 1_000);
    await h.pass();
    await h.pass();
    expect(h.receipts(order.id)).toMatchObject([
      { kind: 'sale', state: 'issued' },
      { kind: 'return', state: 'issued' },
    ]);
  });

  it('wrong use says why and changes nothing', async () => {
    h = buildFiscalCore();
    const order = await unknownSale();
    const before = h.receipts(order.id);
    for (const args of [
      ['receipt', String(order.id), '--issued'],
      ['receipt', String(order.id)],
      ['receipt', 'x', '--not-issued'],
      ['receipt', String(order.id), '--not-issued', '--register-id', '1'],
      ['receipt', String(order.id + 100), '--not-issued'],
    ]) {
      const result = await cli(...args);
      expect(result.code, args.join(' ')).toBe(64);
      expect(result.stderr).toMatch(/vendgate: /);
    }
    expect(h.receipts(order.id)).toEqual(before);
  });
});
