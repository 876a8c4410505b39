import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { current, fakePiEachTest } from './fake-system.js';
import { waitFor } from '../../helpers/wait.js';
import { orderState, paidOrder } from '../../helpers/service.js';

const pis = fakePiEachTest();

// The update itself, its backup and its --help: update.test.ts.
describe('scripts/update.sh', () => {
  it('rolls back to the previous release when the new one does not start, and says so', async () => {
    const pi = await pis.installed();
    const before = current(pi);
    // Migrates fine, then dies at start.
    const broken = pi.source('2.0.0', (dir) => {
      renameSync(join(dir, 'dist/vendgate.js'), join(dir, 'dist/vendgate-real.js'));
      writeFileSync(
        join(dir, 'dist/vendgate.js'),
        "if (process.argv[2] === 'start') { process.stderr.write('boom\\n'); process.exit(1); }\nawait import('./vendgate-real.js');\n",
      );
    });

    const update = await pi.run('update.sh', [broken], broken);

    expect(update.code).toBe(1);
    expect(update.stdout).toMatch(/schema version \d+/);
    expect(update.stderr).toContain(`Rolling back to ${before} (the new release did not start)`);
    expect(update.stderr).toMatch(/update failed \(the new release did not start\); rolled back to .* passes its selftest/);
    expect(current(pi)).toBe(before);
    expect(pi.read('vendgate-service.log')).toContain('"vendgate ready"');
  });

  it('rolls back when the new release cannot even migrate the database', async () => {
    const pi = await pis.installed();
    const before = current(pi);
    const broken = pi.source('2.0.0', (dir) =>
      writeFileSync(join(dir, 'dist/vendgate.js'), "process.stderr.write('boom\\n'); process.exit(1);\n"),
    );

    const update = await pi.run('update.sh', [broken], broken);

    expect(update.code).toBe(1);
    expect(update.stderr).toContain(`Rolling back to ${before} (the migration failed)`);
    expect(current(pi)).toBe(before);
  });

  it('never cuts a vend short: a vend in flight when the update stops the service is finished, once, and the order ends vended', async () => {
    const pi = await pis.installed();
    const config = join(pi.root, 'etc/vendgate/config.yaml');
    const slow = pi.read('etc/vendgate/config.yaml').replace('durationMs: 0', 'durationMs: 4000');
    expect(slow).toContain('durationMs: 4000');
    writeFileSync(config, slow);
    expect((await pi.exec('systemctl', ['restart', 'vendgate.service'])).code).toBe(0);
    const order = await paidOrder(pi.localUrl, 'A1');
    const state = () => orderState(pi.localUrl, order.orderId);
    await waitFor(async () => (await state()) === 'vending', { timeoutMs: 60_000, what: 'the vend to be in flight' });

    const update = await pi.run('update.sh', [pi.source('1.1.0')], pi.source('1.1.0'));

    expect(update.code, update.stderr).toBe(0);
    expect(await state()).toBe('vended');
    const actuations = pi
      .read('var/lib/vendgate/actuations.jsonl')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { orderId: number });
    expect(actuations.filter((a) => a.orderId === order.orderId)).toHaveLength(1);
  });
});
