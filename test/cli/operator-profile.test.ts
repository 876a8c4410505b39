import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startService } from '../helpers/service.js';
import { testBroker } from '../helpers/broker.js';
import { tempDir } from '../helpers/temp.js';
import { commandSendArgs, OPERATOR } from '../helpers/operator.js';
import { startEmbeddedBroker } from '../../src/mqtt/index.js';
import { run } from './cli-io.js';
import { starterDevice } from './setup-device.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The operator's side of signed commands: `vendgate setup` asks for the broker and writes ops.yaml;
 * that profile (broker and device, nothing else) is enough for `vendgate command send`, and a send
 * to a broker the device is not on says which broker it tried.
 */
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function workDir(): string {
  const dir = tempDir();
  cleanups.push(() => dir.cleanup());
  return dir.path;
}

function keyFile(dir: string): string {
  const path = join(dir, 'ops.key');
  writeFileSync(path, OPERATOR.privateKeyPem, { mode: 0o600 });
  return path;
}

/** A test broker and a device (the compiled service) connected to it, both stopped after the test. */
async function deviceOnTestBroker() {
  const broker = await testBroker();
  cleanups.push(() => broker.close());
  const deviceId = `ops-${randomBytes(4).toString('hex')}`;
  const svc = await startService({ config: { device: { id: deviceId }, mqtt: { url: broker.url } } });
  cleanups.push(() => svc.stop());
  await waitFor(() => svc.logs().some((l) => l.msg === 'MQTT connected'), { what: 'the device on the broker' });
  return { broker, deviceId, svc };
}

/** The device's answer key, as `vendgate command device-key` prints it for the operator's profile. */
async function answerKeyOf(configPath: string): Promise<Record<string, unknown>> {
  const printed = await run(['command', 'device-key', '--config', configPath]);
  expect(printed.code).toBe(0);
  return parse(printed.stdout) as Record<string, unknown>;
}

/** The profile with the device's answer key added, so an answer can be told from a forgery. */
async function withAnswerKey(ops: string, configPath: string): Promise<void> {
  writeFileSync(ops, stringify({ ...(parse(readFileSync(ops, 'utf8')) as object), ...(await answerKeyOf(configPath)) }));
}

const refill = (profile: string, key: string, extra: string[] = []) =>
  run([...commandSendArgs('refill', key, OPERATOR.keyId, { slot: 'A1', count: 7 }), '--config', profile, ...extra]);

describe("the operator's command profile", () => {
  it('setup asks for the broker and writes ops.yaml (no secret in it); that profile alone sends a signed command', async () => {
    const { broker, deviceId, svc } = await deviceOnTestBroker();
    const dir = workDir();
    const device = starterDevice(dir);
    // A sandbox device: its id, no tunnel, the operator's broker and its login, no service menu PIN.
    const setup = device.setup(['sandbox', deviceId, 'none', broker.url, 'operator-1', 'broker-password-1', '']);
    expect(setup.stderr).toBe('');
    expect(setup.status).toBe(0);
    const written = device.files();
    expect(parse(written.config).mqtt).toMatchObject({ url: broker.url, username: 'operator-1' });
    // The starter's comment described the old value: it goes with it.
    expect(written.config).not.toContain('no fleet monitoring yet');
    expect(written.secrets).toContain('VENDGATE_MQTT_PASSWORD=broker-password-1');
    expect(setup.stdout).not.toContain('broker-password-1');

    const ops = join(dir, 'ops.yaml');
    const profile = readFileSync(ops, 'utf8');
    expect(parse(profile)).toEqual({ device: { id: deviceId }, mqtt: { url: broker.url, username: 'operator-1' } });
    expect(profile).not.toContain('broker-password-1');
    expect(statSync(ops).mode & 0o777).toBe(0o644);

    // The test broker takes any login: the profile is what is under test.
    await withAnswerKey(ops, svc.configPath);
    const sent = await refill(ops, keyFile(dir));
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ ok: true });
    const stock = await run(['stock', '--json', '--config', svc.configPath]);
    expect(JSON.parse(stock.stdout).slots).toEqual(expect.arrayContaining([expect.objectContaining({ slot: 'A1', stock: 7 })]));
  });

  it("a minimal profile (mqtt.url, device.id and the device's answer key) is enough: no catalog, provider or hardware", async () => {
    const { broker, deviceId, svc } = await deviceOnTestBroker();
    const dir = workDir();
    const ops = join(dir, 'ops.yaml');
    writeFileSync(ops, stringify({ device: { id: deviceId }, mqtt: { url: broker.url } }));
    await withAnswerKey(ops, svc.configPath);
    const sent = await refill(ops, keyFile(dir));
    expect(sent.stderr).toBe('');
    expect(JSON.parse(sent.stdout)).toMatchObject({ ok: true });
  });

  it('against a broker the device is not on, the message names the broker and the device it tried', async () => {
    const elsewhere = await startEmbeddedBroker({ port: 0 });
    cleanups.push(() => elsewhere.close());
    const dir = workDir();
    const ops = join(dir, 'ops.yaml');
    writeFileSync(ops, stringify({ device: { id: 'vm-nowhere' }, mqtt: { url: elsewhere.url } }));
    // Any well-formed answer key: nobody will answer.
    const sent = await refill(ops, keyFile(dir), ['--timeout-ms', '1500', '--device-key', OPERATOR.publicKey]);
    expect(sent.code).toBe(1);
    expect(sent.stderr).toContain(elsewhere.url);
    expect(sent.stderr).toContain('vm-nowhere');
  });
});
