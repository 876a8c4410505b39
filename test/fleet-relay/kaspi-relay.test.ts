import { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulator, NO_FAULTS, type Simulator } from '../../src/simulator/index.js';
import { createProvider, type PaymentProvider } from '../../src/payments/index.js';
import { signKaspiRelayRequest } from '../../src/payments/adapters.js';
import { parseSettings } from '../../src/settings/index.js';
import { createLogger, silentLogger, type Logger } from '../../src/util/index.js';
import { openKaspiJournal } from '../../src/fleet-relay/kaspi-journal.js';
import { KASPI_DEVICE_SECRET, KASPI_OTHER_SECRET, KASPI_TEST_TLS, startKaspiRelayFor } from '../helpers/kaspi-relay.js';
import { tempDir } from '../helpers/temp.js';

/**
 * The fleet relay's Kaspi caller over real sockets, in front of the Kaspi simulator: only devices it
 * can authenticate get calls made, each with its own device token and only on its own QRs; Kaspi's
 * certificate and whitelist refusals move nothing; a create or return is never sent to Kaspi twice.
 */
const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** The relay's logger at `level`, its lines kept as written for the test to read. */
function capturedLogger(level: 'debug' | 'info'): { lines: string[]; logger: Logger } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _e, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, logger: createLogger({ level, destination }) };
}

async function kaspiSim(options: Parameters<typeof createSimulator>[0] extends infer O ? Partial<O> : never = {}): Promise<Simulator> {
  const sim = createSimulator({ provider: 'kaspi', currency: 'KZT', seed: 5, expirySweepMs: 0, ...options });
  await sim.start();
  cleanup.push(() => sim.stop());
  return sim;
}

function device(relayUrl: string, id: string, secret: string): Promise<PaymentProvider> {
  const settings = parseSettings({
    device: { id, currency: 'KZT', catalog: [{ slot: 'A1', name: 'Cola', price: 1500 }] },
    provider: { name: 'kaspi', baseUrl: relayUrl, clientSecret: secret, requestTimeoutMs: 5_000, createDeadlineMs: 3_000 },
  });
  return createProvider({ clock: { now: () => Date.now() }, logger: silentLogger(), random: () => 0.5, sleep: async () => {} }, settings);
}

let n = 0;
const order = (deviceId = 'vm-001') => {
  n += 1;
  return {
    idempotencyKey: `${deviceId}-db1-${n}-pay`,
    reference: `${deviceId}-${n}`,
    amount: 1500,
    currency: 'KZT',
    description: 'Cola',
    expiresInSec: 120,
    captureMode: 'automatic' as const,
  };
};

async function signedFetch(url: string, path: string, as: { id: string; secret: string }, method = 'GET', body = '') {
  const headers = signKaspiRelayRequest(as.secret, { deviceId: as.id, method, pathWithQuery: path, body, nowMs: Date.now() });
  return fetch(url + path, {
    method,
    headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body } : {}),
  });
}

describe('the relay authenticates devices and keeps each to its own', () => {
  it("a device reads, cancels and returns only its own QRs; another device's answer is the same as for none", async () => {
    const sim = await kaspiSim();
    const relay = await startKaspiRelayFor(sim);
    cleanup.push(() => relay.stop());
    const mine = await device(relay.url, 'vm-001', KASPI_DEVICE_SECRET);
    const other = await device(relay.url, 'vm-002', KASPI_OTHER_SECRET);
    const qr = await mine.createInvoice(order());
    await sim.pay(qr.id);
    await expect(other.getInvoice(qr.id)).rejects.toMatchObject({ kind: 'not_found' });
    await expect(other.getInvoice('123')).rejects.toMatchObject({ kind: 'not_found' });
    await expect(other.cancelInvoice(qr.id)).rejects.toMatchObject({ kind: 'not_found' });
    await expect(other.refund({ invoiceId: qr.id, amount: 1500, idempotencyKey: 'steal' })).rejects.toMatchObject({ kind: 'not_found' });
    expect(sim.records().refunds).toEqual([]);
    expect(await mine.getInvoice(qr.id)).toMatchObject({ status: 'paid' });
    // Kaspi saw every call under vm-001's own device token only.
    const bodies = sim.records().invoices.map((i) => i.body as { DeviceToken: string });
    expect(bodies.map((b) => b.DeviceToken)).toEqual([sim.info().kaspi!.deviceTokens[0]]);
  });

  it('a device that names another device, signs with a wrong or old secret, or sends a stale request is refused and nothing reaches Kaspi', async () => {
    const sim = await kaspiSim();
    const relay = await startKaspiRelayFor(sim);
    cleanup.push(() => relay.stop());
    const body = JSON.stringify({ externalId: 'x-1', reference: 'vm-001-1', amount: 100 });
    // vm-002 claims to be vm-001, signing with its own secret.
    expect((await signedFetch(relay.url, '/kaspi/v1/qr', { id: 'vm-001', secret: KASPI_OTHER_SECRET }, 'POST', body)).status).toBe(401);
    expect((await signedFetch(relay.url, '/kaspi/v1/qr', { id: 'vm-999', secret: KASPI_DEVICE_SECRET }, 'POST', body)).status).toBe(401);
    const stale = signKaspiRelayRequest(KASPI_DEVICE_SECRET, {
      deviceId: 'vm-001',
      method: 'POST',
      pathWithQuery: '/kaspi/v1/qr',
      body,
      nowMs: Date.now() - 3_600_000,
    });
    expect(
      (await fetch(`${relay.url}/kaspi/v1/qr`, { method: 'POST', headers: { ...stale, 'content-type': 'application/json' }, body })).status,
    ).toBe(401);
    // A signed request whose body was changed on the way.
    const signed = signKaspiRelayRequest(KASPI_DEVICE_SECRET, {
      deviceId: 'vm-001',
      method: 'POST',
      pathWithQuery: '/kaspi/v1/qr',
      body,
      nowMs: Date.now(),
    });
    const tampered = body.replace('100', '1');
    expect(
      (
        await fetch(`${relay.url}/kaspi/v1/qr`, {
          method: 'POST',
          headers: { ...signed, 'content-type': 'application/json' },
          body: tampered,
        })
      ).status,
    ).toBe(401);
    expect((await fetch(`${relay.url}/kaspi/v1/ping`)).status).toBe(401);
    expect(sim.records().requests).toEqual([]);
    expect(relay.relay.stats().authRefused).toBe(5);
  });

  it('bad input gets a clear 400 and reaches nothing; a device over its rate gets 429', async () => {
    const sim = await kaspiSim();
    const relay = await startKaspiRelayFor(sim, { maxCallsPerDevicePerMinute: 3 });
    cleanup.push(() => relay.stop());
    const me = { id: 'vm-001', secret: KASPI_DEVICE_SECRET };
    const bad = await signedFetch(
      relay.url,
      '/kaspi/v1/qr',
      me,
      'POST',
      JSON.stringify({ externalId: 'bad id!', reference: 'r', amount: -1 }),
    );
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_request' } });
    expect((await signedFetch(relay.url, '/kaspi/v1/ping', me)).status).toBe(200);
    expect((await signedFetch(relay.url, '/kaspi/v1/ping', me)).status).toBe(200);
    const limited = await signedFetch(relay.url, '/kaspi/v1/ping', me);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBeTruthy();
    expect(sim.records().invoices).toEqual([]);
  });

  it('audit lines name the device, the action and the outcome, and never a device token, a secret or a QR payload', async () => {
    const sim = await kaspiSim();
    const { lines, logger } = capturedLogger('debug');
    const relay = await startKaspiRelayFor(sim, { logger });
    cleanup.push(() => relay.stop());
    const me = await device(relay.url, 'vm-001', KASPI_DEVICE_SECRET);
    const qr = await me.createInvoice(order());
    await sim.pay(qr.id);
    await me.getInvoice(qr.id);
    await me.refund({ invoiceId: qr.id, amount: 1500, idempotencyKey: 'r' });
    const audit = lines.map((l) => JSON.parse(l)).filter((l) => l.audit === 'kaspi');
    expect(audit.map((l) => `${l.deviceId}:${l.action}:${l.outcome}`)).toEqual([
      'vm-001:create:created',
      'vm-001:read:Processed',
      'vm-001:return:succeeded',
    ]);
    const text = lines.join('');
    for (const secret of [...sim.info().kaspi!.deviceTokens, KASPI_DEVICE_SECRET, sim.info().kaspi!.apiKey!, qr.payUrl])
      expect(text).not.toContain(secret);
  });
});

describe("Kaspi's access rules: the certificate and the whitelist", () => {
  it('with the client certificate the relay creates and reads; without one Kaspi refuses the handshake, nothing is created, and the device may try again', async () => {
    const sim = await kaspiSim({ kaspiTls: KASPI_TEST_TLS.server() });
    expect(sim.url).toMatch(/^https:/);
    const good = await startKaspiRelayFor(sim);
    cleanup.push(() => good.stop());
    const qr = await (await device(good.url, 'vm-001', KASPI_DEVICE_SECRET)).createInvoice(order());
    await sim.pay(qr.id);
    expect(await (await device(good.url, 'vm-001', KASPI_DEVICE_SECRET)).getInvoice(qr.id)).toMatchObject({ status: 'paid' });

    const bare = await startKaspiRelayFor(sim, { withoutCertificate: true });
    cleanup.push(() => bare.stop());
    const request = order();
    const err = await (await device(bare.url, 'vm-001', KASPI_DEVICE_SECRET)).createInvoice(request).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'server', providerCode: 'kaspi_unreachable' });
    expect(sim.records().invoices).toHaveLength(1);
    // Never reached Kaspi, so not in doubt: the same attempt goes through once the certificate is there.
    const retried = await (await device(good.url, 'vm-001', KASPI_DEVICE_SECRET)).createInvoice(request);
    expect(retried.replayed).toBeUndefined();
  });

  it('from an address Kaspi has not whitelisted every call is refused with 403: no QR is made and the operator is told why', async () => {
    const sim = await kaspiSim({ kaspiWhitelist: ['10.20.30.40'] });
    const { lines, logger } = capturedLogger('info');
    const relay = await startKaspiRelayFor(sim, { logger });
    cleanup.push(() => relay.stop());
    const err = await (await device(relay.url, 'vm-001', KASPI_DEVICE_SECRET)).createInvoice(order()).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'server', providerCode: 'kaspi_access_refused' });
    expect(sim.records().invoices).toEqual([]);
    expect(sim.records().requests.every((r) => r.status === 403)).toBe(true);
    expect(lines.join('')).toMatch(/whitelist/);
  });
});

describe('the journal', () => {
  it('a return Kaspi refused with 429 was not taken: the same key goes again, also after a relay restart, and the money moves once', async () => {
    const dir = tempDir('vendgate-kaspi-journal-');
    cleanup.push(() => dir.cleanup());
    const journalPath = join(dir.path, 'kaspi.db');
    const sim = await kaspiSim();
    const first = await startKaspiRelayFor(sim, { journalPath });
    const mine = await device(first.url, 'vm-001', KASPI_DEVICE_SECRET);
    const qr = await mine.createInvoice(order());
    await sim.pay(qr.id);
    const request = { invoiceId: qr.id, amount: 300, idempotencyKey: 'r-after-429' };
    sim.setFaults({ ...NO_FAULTS, rateLimit: 1 });
    await expect(mine.refund(request)).rejects.toMatchObject({ kind: 'rate_limited' });
    // The relay and the device restart; the journal file stays.
    await first.stop();
    const second = await startKaspiRelayFor(sim, { journalPath });
    cleanup.push(() => second.stop());
    const restarted = await device(second.url, 'vm-001', KASPI_DEVICE_SECRET);
    await expect(restarted.refund(request)).rejects.toMatchObject({ kind: 'rate_limited' });
    sim.setFaults({ ...NO_FAULTS });
    const done = await restarted.refund(request);
    expect(done).toMatchObject({ status: 'succeeded', refundId: expect.any(String) });
    // Once Kaspi took it, the same key is answered from the journal and never sent again.
    expect(await restarted.refund(request)).toMatchObject({ status: 'succeeded', refundId: done.refundId });
    const returns = sim.records().requests.filter((r) => r.path === '/r3/v01/payment/return');
    expect(returns.map((r) => r.status)).toEqual([429, 429, 200]);
    expect(sim.records().refunds.map((r) => r.amount)).toEqual([300]);
    expect(await restarted.getInvoice(qr.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: 300 });
  });

  it('a create or return a relay crash left unanswered is in doubt on the next start, and never sent again', async () => {
    const dir = tempDir('vendgate-kaspi-journal-');
    cleanup.push(() => dir.cleanup());
    const path = join(dir.path, 'kaspi.db');
    const before = openKaspiJournal(path, () => 1_000);
    before.claimCreate('vm-001', 'vm-001-db1-1-pay', 'vm-001-1', 1500);
    before.close();
    const sim = await kaspiSim();
    const relay = await startKaspiRelayFor(sim, { journalPath: path });
    cleanup.push(() => relay.stop());
    const err = await (
      await device(relay.url, 'vm-001', KASPI_DEVICE_SECRET)
    )
      .createInvoice({ ...order(), idempotencyKey: 'vm-001-db1-1-pay', reference: 'vm-001-1' })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'processing', message: expect.stringMatching(/not sent again/) });
    expect(sim.records().requests).toEqual([]);
  });
});
