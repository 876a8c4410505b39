import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startGeregeStack, type GeregeStack } from '../chaos/stack.js';
import { geregeClient, intentBody } from '../../simulator/harness.js';

import { watch } from '../../mqtt/watch.js';
import { cleanup, closeWatcher, stop } from '../../helpers/cleanup.js';
import { BROKER, commandResult } from '../../helpers/on-broker.js';
import { signedPayload } from '../../helpers/operator.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * A person settles a parked orphan with one command, on the command line or as a signed MQTT
 * command: the refund goes out once, the alarm closes, the audit event is written, and a second run
 * answers the same without a second refund. The real service against the Gerege simulator, a real
 * broker (Mosquitto at 127.0.0.1:1883, or MQTT_TEST_URL).
 */
const MAIN = new URL('../../../dist/main.js', import.meta.url).pathname;

const defer = cleanup();

function settleCli(s: GeregeStack, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'settle', ...args, '--config', s.svc.configPath],
      { encoding: 'utf8', env: { ...process.env, ...s.env } },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** Paid orphans under the device's reference, parked by the sweep at the next start. */
async function parkedOrphans(s: GeregeStack, deviceId: string, count: number): Promise<string[]> {
  const info = s.sim.info();
  const api = await geregeClient(s.sim, { id: info.clientId!, secret: info.clientSecret! });
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const reference = `${deviceId}-lostdb-${i + 1}-${randomBytes(4).toString('hex')}`;
    const created = await api.post('/payment-intents', intentBody({ reference }), `${reference}-pay`);
    ids.push(created.json.id as string);
    await s.sim.pay(created.json.id as string);
  }
  await waitFor(() => ids.every((id) => s.query('SELECT 1 FROM webhook_events WHERE object_id = ?', id).length > 0), {
    what: 'the payment webhooks in the inbox',
  });
  await s.svc.kill('SIGTERM');
  await s.svc.restart();
  await waitFor(
    () => ids.every((id) => s.query("SELECT 1 FROM orphan_invoices WHERE invoice_id = ? AND state = 'person'", id).length === 1),
    { timeoutMs: 60_000, what: 'the orphans parked' },
  );
  return ids;
}

const refundsOf = (s: GeregeStack, id: string) => s.sim.records().refunds.filter((r) => r.invoiceId === id);

describe('vendgate settle: a person settles a parked orphan', () => {
  it(
    'on the command line: refunded once, alarm closed, audit event; the second run answers the same and sends nothing',
    { timeout: 180_000 },
    async () => {
      const deviceId = `settle-${process.pid}`;
      const s = defer(await startGeregeStack({ readyTimeoutMs: 60_000, config: { device: { id: deviceId } } }), stop);
      const [refunded, kept] = await parkedOrphans(s, deviceId, 2);

      const first = await settleCli(s, [`orphan_invoice/${refunded}`, 'refund']);
      expect(first, first.stderr).toMatchObject({ code: 0 });
      expect(first.stdout).toContain('1500 refunded');
      expect(refundsOf(s, refunded!).map((r) => r.amount)).toEqual([1500]);
      expect(s.query('SELECT name FROM alarms WHERE name = ?', `orphan_invoice/${refunded}`)).toEqual([]);
      expect(s.query('SELECT outcome, state, by_whom FROM settled_cases WHERE name = ?', `orphan_invoice/${refunded}`)).toEqual([
        { outcome: 'refund', state: 'done', by_whom: 'cli' },
      ]);
      const events = s.query<{ payload: string }>("SELECT payload FROM outbox WHERE kind = 'event' AND payload LIKE '%case.settled%'");
      expect(events.map((e) => JSON.parse(e.payload))).toEqual([
        expect.objectContaining({ case: `orphan_invoice/${refunded}`, outcome: 'refund', by: 'cli' }),
      ]);

      const again = await settleCli(s, [`orphan_invoice/${refunded}`, 'refund']);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain('settled before: nothing done again');
      expect(refundsOf(s, refunded!)).toHaveLength(1);
      // Another outcome for a settled case is refused, and changes nothing.
      const other = await settleCli(s, [`orphan_invoice/${refunded}`, 'goods-went-out']);
      expect(other.code).toBe(1);
      expect(other.stderr).toContain('VG_ERR_ORDER_STATE');

      const goods = await settleCli(s, [`orphan_invoice/${kept}`, 'goods-went-out']);
      expect(goods.code).toBe(0);
      expect(refundsOf(s, kept!)).toEqual([]);
      expect(s.query('SELECT name FROM alarms WHERE name LIKE ?', 'orphan_invoice/%')).toEqual([]);
      // Bad input: a clear error, nothing written.
      const bad = await settleCli(s, ['orphan_invoice/pi_nosuch', 'refund']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('VG_ERR_NOT_FOUND');
    },
  );

  it(
    'as a signed MQTT command: refunded once; the same settlement under a new request id answers the same, with no second refund',
    { timeout: 180_000 },
    async () => {
      const deviceId = `settlemq-${randomBytes(3).toString('hex')}`;
      const prefix = `vgsettle${randomBytes(3).toString('hex')}`;
      const base = `${prefix}/${deviceId}`;
      const watcher = defer(await watch(BROKER, [`${base}/#`]), closeWatcher);
      const s = defer(
        await startGeregeStack({ readyTimeoutMs: 60_000, config: { device: { id: deviceId }, mqtt: { url: BROKER, prefix } } }),
        stop,
      );
      const [orphan] = await parkedOrphans(s, deviceId, 1);
      await watcher.next(`${base}/status`, (m) => m.payload === 'online', 30_000);

      const send = (requestId: string, body: Record<string, unknown>) =>
        commandResult({ watcher, base }, 'settle', signedPayload(deviceId, 'settle', body, { requestId }), requestId);
      const unsigned = `${base}/cmd/settle`;
      await watcher.publish(unsigned, JSON.stringify({ requestId: 'free', case: `orphan_invoice/${orphan}`, outcome: 'refund' }));
      await watcher.until(() => watcher.on(`${unsigned}/result`).length > 0, { what: 'the unsigned answer' });
      expect(JSON.parse(watcher.on(`${unsigned}/result`)[0]!.payload)).toMatchObject({
        ok: false,
        error: { code: 'VG_ERR_COMMAND_UNSIGNED' },
      });
      expect(refundsOf(s, orphan!)).toEqual([]);

      const first = await send('settle-1', { case: `orphan_invoice/${orphan}`, outcome: 'refund' });
      expect(first).toMatchObject({ ok: true, result: { outcome: 'refund', state: 'done', again: false } });
      const second = await send('settle-2', { case: `orphan_invoice/${orphan}`, outcome: 'refund' });
      expect(second).toMatchObject({ ok: true, result: { outcome: 'refund', state: 'done', again: true } });
      expect(refundsOf(s, orphan!).map((r) => r.amount)).toEqual([1500]);
      expect(s.query('SELECT name FROM alarms WHERE name = ?', `orphan_invoice/${orphan}`)).toEqual([]);
      expect(s.query('SELECT by_whom FROM settled_cases WHERE name = ?', `orphan_invoice/${orphan}`)[0]!.by_whom).toMatch(/^mqtt \(key /);
    },
  );
});
