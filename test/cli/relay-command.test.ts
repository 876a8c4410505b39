import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, EXIT } from '../../src/cli/index.js';
import { testBroker } from '../helpers/broker.js';
import { freePort } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { fakeIo } from './cli-io.js';
import { waitFor } from '../helpers/wait.js';

describe('vendgate relay', () => {
  it('exits 78 and lists every problem when its settings are wrong, before listening', async () => {
    const dir = tempDir('vendgate-relay-cli-');
    try {
      const path = join(dir.path, 'relay.yaml');
      writeFileSync(path, 'relay:\n  providers: [gerege]\nmqtt:\n  url: embedded\n');
      const { io, stderr } = fakeIo({ env: {} });
      expect(await runCli(['relay', '--config', path], io)).toBe(EXIT.CONFIG);
      expect(stderr()).toContain('relay.webhookSecrets.gerege: required: set VENDGATE_WEBHOOK_SECRETS_GEREGE or VENDGATE_WEBHOOK_SECRETS');
      expect(stderr()).toContain("mqtt.url: the relay publishes to the fleet's broker");
    } finally {
      dir.cleanup();
    }
  });

  it('runs until the stop signal: ready for systemd, healthy once the broker answered, stopped cleanly', async () => {
    const broker = await testBroker();
    const dir = tempDir('vendgate-relay-cli-');
    try {
      const port = await freePort();
      const path = join(dir.path, 'relay.yaml');
      writeFileSync(
        path,
        `relay:\n  host: 127.0.0.1\n  port: ${port}\nmqtt:\n  url: ${broker.url}\n  prefix: clitest\nlog:\n  level: warn\n`,
      );
      let stop!: (signal: string) => void;
      const notified: string[] = [];
      const { io } = fakeIo({ env: { VENDGATE_WEBHOOK_SECRETS: 'whsec_x' } });
      const running = runCli(['relay', '--config', path], {
        ...io,
        stopSignal: new Promise((resolve) => {
          stop = resolve;
        }),
        notify: (state) => notified.push(state),
      });
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/webhooks/health`).catch(() => null))?.status === 200, {
        timeoutMs: 15_000,
        what: 'the relay healthy',
      });
      expect(notified).toContain('READY=1');
      expect((await fetch(`http://127.0.0.1:${port}/api/state`)).status).toBe(404);
      stop('SIGTERM');
      expect(await running).toBe(EXIT.OK);
      expect(notified.at(-1)).toBe('STOPPING=1');
    } finally {
      dir.cleanup();
      await broker.close();
    }
  });
});
