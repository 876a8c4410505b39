import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort, startService } from '../helpers/service.js';
import { startEmbeddedBroker } from '../../src/mqtt/index.js';
import { runCli } from '../../src/cli/index.js';
import { fakeIo } from './cli-io.js';
import { waitFor } from '../helpers/wait.js';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function holdPort(): Promise<number> {
  const port = await freePort();
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return port;
}

/** `vendgate start` until it exits by itself (a taken port), as a person runs it. */
async function startUntilExit(config: Record<string, unknown>): Promise<{ code: number | null; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'vendgate-busy-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'config.yaml');
  writeFileSync(path, stringify({ ...config, storage: { path: join(dir, 'vendgate.db') } }));
  const child = spawn(process.execPath, [MAIN, 'start', '--config', path], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stderr };
}

const BASE = {
  device: { id: 'busy-test', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
  actuator: { kind: 'sim' },
  mqtt: { url: '' },
};

describe('the demo beside a busy port says in one line which option to use', () => {
  it('local port taken: one stderr line names --local-port and a port that is free', async () => {
    const taken = await holdPort();
    const run = await startUntilExit({
      ...BASE,
      http: { local: { host: '127.0.0.1', port: taken }, webhook: { host: '127.0.0.1', port: await freePort() } },
    });
    expect(run.code).toBe(78);
    const line = run.stderr.split('\n').find((l) => l.includes('--local-port'));
    expect(line, run.stderr).toBeDefined();
    const suggested = Number(/npm start -- --local-port (\d+)/.exec(line!)![1]);
    expect(suggested).not.toBe(taken);
    expect(line).toContain(`port ${taken}`);
  });

  it('broker port taken: the MQTT off line and the selftest hint both name --broker-port, not only mqtt.embeddedPort', async () => {
    const other = await startEmbeddedBroker({ port: await freePort() });
    cleanups.push(() => other.close());
    const svc = await startService({ config: { mqtt: { url: 'embedded', embeddedPort: other.port } } });
    cleanups.push(() => svc.stop());
    const line = await waitFor(() => svc.logs().find((l) => typeof l.msg === 'string' && l.msg.startsWith('MQTT off:')), {
      what: 'the MQTT off line',
    });
    expect(line.msg).toMatch(/start with --broker-port \d+ \(npm start -- --broker-port \d+/);

    const { io, stdout } = fakeIo({ env: {} });
    await runCli(['selftest', '--json', '--config', svc.configPath], io);
    const mqtt = (JSON.parse(stdout()) as { checks: { name: string; status: string; hint: string }[] }).checks.find(
      (c) => c.name === 'mqtt',
    )!;
    expect(mqtt.status).toBe('FAIL');
    expect(mqtt.hint).toMatch(/npm start -- --broker-port \d+/);
  });
});
