import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { cleanupList } from '../helpers/cleanup.js';
import { loadSettings } from '../../src/settings/index.js';
import { runSelftest, type Exec, type SelftestDeps, type SelftestOptions, type CheckResult } from '../../src/selftest/index.js';
import { tempDir } from '../helpers/temp.js';
import { merge, unusedPort } from '../helpers/service.js';

const cleanups = cleanupList();

/** Registers something to undo after the test (servers, temp dirs). */
export function onCleanup(fn: () => unknown): void {
  cleanups(fn);
}

/** A device id no other test (or a shared broker's retained messages) uses. */
export function uniqueDeviceId(): string {
  return `st-${randomBytes(4).toString('hex')}`;
}

/**
 * timedatectl and systemctl as on a healthy Pi whose vendgate unit is not running: the clock is
 * synchronised, `systemctl is-active vendgate` says inactive. Anything else: command not found.
 */
export function fakeExec(options: { ntp?: 'yes' | 'no' | 'missing'; systemdActive?: boolean } = {}): Exec & { calls: string[] } {
  const calls: string[] = [];
  const exec = (async (command: string, args: string[]) => {
    calls.push([command, ...args].join(' '));
    if (command === 'timedatectl') {
      if (options.ntp === 'missing') return { code: null, stdout: '', error: 'spawn timedatectl ENOENT' };
      return { code: 0, stdout: `${options.ntp ?? 'yes'}\n` };
    }
    if (command === 'systemctl') return options.systemdActive ? { code: 0, stdout: 'active\n' } : { code: 3, stdout: 'inactive\n' };
    return { code: null, stdout: '', error: `spawn ${command} ENOENT` };
  }) as unknown as Exec & { calls: string[] };
  exec.calls = calls;
  return exec;
}

/**
 * A device configuration file in a temp directory whose service is NOT running: listeners on ports
 * nobody listens on, sandbox provider, sim actuator, MQTT off. `config` is merged section by section.
 */
export async function deviceConfig(
  config: Record<string, unknown> = {},
): Promise<{ dir: string; path: string; dbPath: string; simLog: string }> {
  const dir = tempDir('vendgate-selftest-');
  onCleanup(dir.cleanup);
  mkdirSync(dir.path, { recursive: true });
  const dbPath = join(dir.path, 'vendgate.db');
  const simLog = join(dir.path, 'actuations.jsonl');
  const localPort = await unusedPort();
  let webhookPort = await unusedPort();
  while (webhookPort === localPort) webhookPort = await unusedPort();
  const defaults = {
    device: { id: uniqueDeviceId(), mode: 'vending', currency: 'MNT', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
    provider: { name: 'sandbox' },
    // Nothing listens there, ever: a freePort() number may be handed to another test's service meanwhile.
    http: { local: { host: '127.0.0.1', port: localPort }, webhook: { host: '127.0.0.1', port: webhookPort } },
    storage: { path: dbPath },
    actuator: { kind: 'sim', sim: { logPath: simLog, durationMs: 0 } },
    mqtt: { url: '' },
    log: { level: 'silent' },
  };
  const path = join(dir.path, 'config.yaml');
  writeFileSync(path, stringify(merge(defaults, config)));
  return { dir: dir.path, path, dbPath, simLog };
}

/** Loads the file like the CLI does and runs the selftest in this process. */
export async function selftestFor(
  path: string,
  options: { env?: NodeJS.ProcessEnv } & Partial<Omit<SelftestOptions, 'settings' | 'source' | 'environment'>> & {
      publish?: boolean;
      store?: boolean;
    } = {},
  deps: SelftestDeps = {},
) {
  const { env, ...rest } = options;
  const loaded = loadSettings({ path, env: env ?? {} });
  const run = await runSelftest(
    {
      settings: loaded.settings,
      source: loaded.source,
      environment: loaded.environment,
      publish: false,
      // A refused port answers at once; on a loaded machine the default 1.5 s could expire first.
      probeTimeoutMs: 30_000,
      ...rest,
    },
    { exec: fakeExec(), ...deps },
  );
  return { ...run, settings: loaded.settings };
}

export function byName(checks: CheckResult[]): Record<string, CheckResult> {
  return Object.fromEntries(checks.map((c) => [c.name, c]));
}

export function failing(checks: CheckResult[]): string[] {
  return checks.filter((c) => c.status === 'FAIL').map((c) => c.name);
}
