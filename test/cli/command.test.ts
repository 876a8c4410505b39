import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanup } from '../helpers/cleanup.js';
import { serviceOnBroker } from '../helpers/on-broker.js';
import { tempDir } from '../helpers/temp.js';
import { run } from './cli-io.js';

/**
 * `vendgate command keygen|sign|send`: an operator makes a key, gives its public half to the
 * device, and signs commands from a shell. Against the compiled service on a real broker
 * (Mosquitto at 127.0.0.1:1883, or MQTT_TEST_URL).
 */
describe('vendgate command', () => {
  const defer = cleanup();

  it('keygen writes a private key (0600, never over a file) and prints the settings lines; send signs, publishes and prints the answer', async () => {
    const dir = defer(tempDir(), (d) => d.cleanup());
    const keyPath = join(dir.path, 'ops.pem');
    /** `vendgate command <verb> <name>` signed with the key at keyPath under `keyId`. */
    const withKey = (verb: 'send' | 'sign', name: string, keyId: string, ...rest: string[]) =>
      run(['command', verb, name, '--key', keyPath, '--key-id', keyId, ...rest]);
    const made = await run(['command', 'keygen', '--out', keyPath, '--key-id', 'ops-cli']);
    expect(made.code).toBe(0);
    expect(statSync(keyPath).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyPath, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const publicKey = /publicKey: (\S+)/.exec(made.stdout)![1]!;
    expect(made.stdout).toContain('- id: ops-cli');
    expect((await run(['command', 'keygen', '--out', keyPath, '--key-id', 'ops-cli'])).code).toBe(64);

    const { svc, deviceId } = await serviceOnBroker(defer, 'cli', {
      mqtt: { allowRemoteVend: true },
      commands: { keys: [{ id: 'ops-cli', publicKey }] },
    });

    const sent = await withKey('send', 'test_vend', 'ops-cli', '--body', '{"slot":"A1"}', '--config', svc.configPath);
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ ok: true });
    await svc.waitFor(() => svc.readSimLog().length === 1, { timeoutMs: 15_000, what: 'one test actuation' });

    // The same key under an id the device does not know: refused, exit 1, nothing actuated.
    const unknown = await withKey('send', 'test_vend', 'ops-other', '--body', '{"slot":"A1"}', '--config', svc.configPath);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ ok: false, error: { code: 'VG_ERR_COMMAND_UNKNOWN_KEY' } });

    // sign prints the envelope for any tool to publish.
    const signed = await withKey(
      'sign',
      'refund',
      'ops-cli',
      '--device',
      deviceId,
      '--db-id',
      'ab12cd',
      '--body',
      JSON.stringify({ order: `${deviceId}-ab12cd-1-0badf00d` }),
      '--request-id',
      'r-9',
    );
    expect(signed.code).toBe(0);
    const envelope = JSON.parse(signed.stdout) as { signed: string; keyId: string; signature: string };
    expect(envelope.keyId).toBe('ops-cli');
    expect(JSON.parse(envelope.signed)).toMatchObject({
      v: 1,
      requestId: 'r-9',
      deviceId,
      dbId: 'ab12cd',
      command: 'refund',
      body: { order: `${deviceId}-ab12cd-1-0badf00d` },
    });
    // A local order number is refused before anything is signed: it repeats after a database swap.
    const local = await withKey('sign', 'refund', 'ops-cli', '--device', deviceId, '--body', '{"orderId":1}');
    expect(local.code).toBe(64);
    expect(local.stderr).toContain('reference');
    expect(svc.readSimLog()).toHaveLength(1);
  });
});
