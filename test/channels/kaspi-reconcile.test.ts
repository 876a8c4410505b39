import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, type CliIo } from '../../src/cli/index.js';
import { waitFor } from '../helpers/wait.js';
import { startProviderStack, type ProviderStack } from '../techniques/chaos/stack.js';

/**
 * `vendgate reconcile` with Kaspi QR: it reads every QR this database knows through the fleet
 * relay's Kaspi caller (the device's own signed calls) and names a payment the device missed.
 */
let stack: ProviderStack | null = null;
afterEach(async () => {
  await stack?.stop();
  stack = null;
});

async function cli(s: ProviderStack, ...args: string[]) {
  const out: string[] = [];
  const io: CliIo = {
    stdout: new Writable({
      write(chunk, _e, done) {
        out.push(chunk.toString());
        done();
      },
    }),
    stderr: new Writable({ write: (_c, _e, done) => done() }),
    env: s.env,
    stopSignal: new Promise(() => {}),
    notify: () => {},
    isTty: false,
  };
  const code = await runCli([...args, '--config', s.svc.configPath], io);
  return { code, stdout: out.join('') };
}

describe('vendgate reconcile: kaspi', () => {
  it('lists a QR paid while the device was down (exit 1), and nothing once the restarted service vended it', async () => {
    stack = await startProviderStack({ provider: 'kaspi', config: { device: { id: 'kaspi-rec' }, provider: { invoiceTtlSec: 120 } } });
    const s = stack;
    const created = await s.call('POST', '/api/orders', { slot: 'A1' });
    expect(created.status).toBe(201);
    await s.svc.kill('SIGKILL');
    await s.sim.pay(created.json.invoiceId as string);

    const missed = await cli(s, 'reconcile', '--json');
    expect(missed.code).toBe(1);
    const report = JSON.parse(missed.stdout) as { findings: { kind: string; invoiceId: string }[] };
    expect(report.findings).toEqual([expect.objectContaining({ kind: 'paid_not_vended', invoiceId: created.json.invoiceId })]);

    await s.svc.restart();
    expect((await s.waitSettled(created.json.orderId as number, 60_000)).state).toBe('vended');
    await waitFor(async () => (await cli(s, 'reconcile')).code === 0, { timeoutMs: 30_000, what: 'reconcile to find nothing' });
  });
});
