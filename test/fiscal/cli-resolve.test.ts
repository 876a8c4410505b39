import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runCli } from '../../src/cli/index.js';
import { fakeIo } from '../cli/cli-io.js';
import { buildFiscalCore, type FiscalHarness } from './harness.js';

describe('vendgate resolve --vended with a fiscal register', () => {
  let h: FiscalHarness;
  afterEach(async () => h.close());

  it('writes the sale receipt row in the resolve transaction; the running service issues it', async () => {
    h = buildFiscalCore();
    h.machine.next = () => ({ result: 'unknown', detail: 'no answer' });
    const order = await h.sell();
    expect(order.state).toBe('vend_uncertain');
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
