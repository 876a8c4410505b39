import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort } from '../helpers/service.js';
import { runMain } from '../helpers/process.js';

describe('a start on a machine that lacks the configured hardware', () => {
  it('a GPIO relay without GPIO: one line on stderr naming the setting and what to do, exit 78, nothing written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vendgate-nogpio-'));
    const data = join(dir, 'data');
    const path = join(dir, 'config.yaml');
    writeFileSync(
      path,
      stringify({
        device: { id: 'nogpio', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
        http: { local: { host: '127.0.0.1', port: await freePort() }, webhook: { host: '127.0.0.1', port: await freePort() } },
        storage: { path: join(data, 'vendgate.db') },
        actuator: { kind: 'relay', relay: { pin: 17 } },
        mqtt: { url: '' },
      }),
    );
    expect(existsSync('/sys/class/gpio/export'), 'this test needs a machine without GPIO').toBe(false);

    const result = await runMain(['start', '--config', path]);
    expect(result.code).toBe(78);
    const lines = result.stderr.trim().split('\n');
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^vendgate: could not start: actuator\.relay\.pin \(BCM 17\) needs GPIO/);
    expect(lines[0]).toContain(`(actuator.relay.pin in ${path})`);
    expect(lines[0]).toContain('actuator.kind: sim');
    // No stack trace anywhere, and the journal's fatal line names the setting.
    expect(result.stdout + result.stderr).not.toMatch(/\n\s+at /);
    const fatal = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((entry) => entry.msg === 'could not start');
    expect(fatal).toMatchObject({ code: 'VG_ERR_HARDWARE', setting: 'actuator.relay.pin' });
    // Nothing written: no database, no lock, not even the data directory.
    expect(existsSync(data) ? readdirSync(data) : []).toEqual([]);
  });
});
