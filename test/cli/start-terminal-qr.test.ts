import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startCommand } from '../../src/cli/start.js';
import { fakeIo } from './cli-io.js';
import { tempDir } from '../helpers/temp.js';
import { freePort } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('vendgate start on a terminal', () => {
  it("prints each new order's pay URL and its QR code (qrcode loaded on that first order)", async () => {
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const [localPort, webhookPort] = [await freePort(), await freePort()];
    const configPath = join(dir.path, 'config.yaml');
    writeFileSync(
      configPath,
      stringify({
        device: { id: 'qr-test', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
        http: { local: { host: '127.0.0.1', port: localPort }, webhook: { host: '127.0.0.1', port: webhookPort } },
        storage: { path: join(dir.path, 'vendgate.db') },
        actuator: { kind: 'sim', sim: { logPath: join(dir.path, 'actuations.jsonl') } },
        mqtt: { url: '' },
        log: { level: 'silent' },
      }),
    );
    let stop: (signal: string) => void = () => {};
    const fake = fakeIo();
    let ready = false;
    const io = {
      ...fake.io,
      isTty: true,
      stopSignal: new Promise<string>((resolve) => (stop = resolve)),
      notify: (state: string) => {
        if (state === 'READY=1') ready = true;
      },
    };
    const exited = startCommand({ config: configPath }, io);
    await waitFor(() => ready, { what: 'READY=1' });
    const response = await fetch(`http://127.0.0.1:${localPort}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: 'A1' }),
    });
    expect(response.status).toBe(201);
    const order = (await response.json()) as { reference: string; payUrl: string };
    const printed = await waitFor(() => fake.stderr().includes(`Order ${order.reference}`) && fake.stderr(), {
      what: 'the order on the terminal',
    });
    expect(printed).toContain(`pay at ${order.payUrl}`);
    // The small terminal QR is drawn with half blocks.
    expect(printed.split(`pay at ${order.payUrl}`)[1]).toMatch(/[▀▄█]/);
    stop('SIGTERM');
    expect(await exited).toBe(0);
  });
});
