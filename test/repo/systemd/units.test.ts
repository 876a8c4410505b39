import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { settingsSchema } from '../../../src/settings/index.js';
import { loadSettings } from '../../../src/settings/index.js';

const SYSTEMD = new URL('../../../systemd/', import.meta.url).pathname;
const REPO = new URL('../../../', import.meta.url).pathname;
const EXAMPLES = new URL('../../../config/examples/', import.meta.url).pathname;
/** `Key=value` lines per section; a key given twice keeps every value, in order. */
function unit(name: string): Record<string, Record<string, string[]>> {
  const sections: Record<string, Record<string, string[]>> = {};
  let current = '';
  for (const raw of readFileSync(join(SYSTEMD, name), 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      current = header[1]!;
      sections[current] ??= {};
      continue;
    }
    const eq = line.indexOf('=');
    const key = line.slice(0, eq);
    (sections[current]![key] ??= []).push(line.slice(eq + 1));
  }
  return sections;
}

describe('systemd units', () => {
  it('vendgate.service: notify with watchdog, restarts except on bad configuration and bad storage, its own user in gpio and dialout', () => {
    const service = unit('vendgate.service').Service!;
    expect(service.Type).toEqual(['notify']);
    expect(service.NotifyAccess).toEqual(['all']);
    expect(Number(service.WatchdogSec)).toBeGreaterThanOrEqual(10);
    expect(service.Restart).toEqual(['always']);
    // 78: bad configuration; 74: a damaged database, a full disk or a card gone read-only (cli/storage-errors.ts).
    expect(service.RestartPreventExitStatus![0]!.split(/\s+/).sort()).toEqual(['74', '78']);
    expect(service.User).toEqual(['vendgate']);
    expect(service.SupplementaryGroups![0]!.split(/\s+/)).toEqual(expect.arrayContaining(['gpio', 'dialout']));
    expect(service.StateDirectory).toEqual(['vendgate']);
    // Secrets as a credential, never in the environment children inherit.
    expect(service.EnvironmentFile).toBeUndefined();
    expect(service.LoadCredential).toEqual(['secrets.env:/etc/vendgate/secrets.env']);
    expect(service.ExecStart![0]).toMatch(
      /^\/usr\/bin\/node \$VENDGATE_NODE_FLAGS \/opt\/vendgate\/current\/dist\/vendgate\.js start --config \/etc\/vendgate\/config\.yaml$/,
    );
    expect(unit('vendgate.service').Unit!.StartLimitIntervalSec).toEqual(['0']);
  });

  it('vendgate.service: node sized for a Pi (the memory limit and allocator settings the resources bench measures, no V8 flag)', () => {
    const service = unit('vendgate.service').Service!;
    // V8's heap is sized by node from the cgroup's limit (128 MB old, 1 MB young for 256 MB), and
    // the compilers by the service itself (src/v8-tiering.ts): a V8 flag on the command line costs
    // Node 22 its compiled built-ins at every start (test/app/bundle-optimizer.test.ts).
    expect(service.MemoryMax).toEqual(['256M']);
    expect(service.Environment).toContain('VENDGATE_NODE_FLAGS=');
    expect(service.Environment!.some((e) => e.includes('VENDGATE_NODE22_FLAGS'))).toBe(false);
    expect(service.Environment).toContain('MALLOC_ARENA_MAX=2');
    expect(service.Environment).toContain('MALLOC_MMAP_THRESHOLD_=32768');
    // The compile cache must be where the hardened service may write.
    expect(service.CacheDirectory).toEqual(['vendgate']);
    expect(service.Environment).toContain('NODE_COMPILE_CACHE=/var/cache/vendgate/compile-cache');
  });

  it('vendgate.service hardening leaves GPIO, serial and V8 working', () => {
    const service = unit('vendgate.service').Service!;
    expect(service.ProtectSystem).toEqual(['strict']);
    expect(service.NoNewPrivileges).toEqual(['yes']);
    // Each of these breaks the device (DEPENDENCIES.md): V8's JIT, /dev/tty* and /dev/gpiochip*, sysfs export.
    for (const key of [
      'MemoryDenyWriteExecute',
      'PrivateDevices',
      'ProtectKernelTunables',
      'ProtectClock',
      'DeviceAllow',
      'DevicePolicy',
    ]) {
      expect(service[key], key).toBeUndefined();
    }
  });

  it('vendgate.service waits on stop longer than the slowest vend any example configures', () => {
    const stopSec = Number(unit('vendgate.service').Service!.TimeoutStopSec);
    const env = { VENDGATE_PROVIDER_CLIENT_SECRET: 'x', VENDGATE_PROVIDER_API_KEY: 'qp_live_x', VENDGATE_WEBHOOK_SECRETS: 'x' };
    for (const file of readdirSync(EXAMPLES)) {
      const raw = parse(readFileSync(join(EXAMPLES, file), 'utf8')) as { mqtt?: { username?: string } };
      const { settings } = loadSettings({
        path: join(EXAMPLES, file),
        env: raw.mqtt?.username ? { ...env, VENDGATE_MQTT_PASSWORD: 'x' } : env,
      });
      expect(settings.actuator.vendTimeoutMs / 1000, file).toBeLessThan(stopSec - 10);
    }
  });

  it('the tunnel exposes only /webhooks/ of the webhook listener and ends in 404', () => {
    const service = unit('vendgate-tunnel.service').Service!;
    expect(service.ExecStart![0]).toMatch(/^\/usr\/bin\/cloudflared .*--config %d\/cloudflared\.yml tunnel run$/);
    expect(service.DynamicUser).toEqual(['yes']);
    // A dynamic user cannot read /etc/vendgate (0750 root:vendgate): systemd hands both files over.
    expect(service.LoadCredential).toEqual(['cloudflared.yml:/etc/vendgate/cloudflared.yml', 'tunnel.json:/etc/vendgate/tunnel.json']);
    expect(service.Environment).toContain('TUNNEL_CRED_FILE=%d/tunnel.json');

    const defaults = settingsSchema().parse({ device: { id: 'x', catalog: [{ slot: 'A', name: 'a', price: 1 }] } }).http;
    const config = parse(readFileSync(join(SYSTEMD, 'cloudflared.yml.example'), 'utf8')) as {
      ingress: { hostname?: string; path?: string; service: string }[];
    };
    const rules = config.ingress;
    const last = rules.at(-1)!;
    expect(last).toEqual({ service: 'http_status:404' });
    for (const rule of rules.slice(0, -1)) {
      expect(rule.path).toBe('^/webhooks/');
      expect(rule.service).toBe(`http://127.0.0.1:${defaults.webhook.port}`);
    }
    expect(JSON.stringify(rules)).not.toContain(`:${defaults.local.port}`);
  });

  it('the kiosk shows the local page in Chromium kiosk mode, after the gateway is ready', () => {
    const kiosk = unit('vendgate-kiosk.service');
    const defaults = settingsSchema().parse({ device: { id: 'x', catalog: [{ slot: 'A', name: 'a', price: 1 }] } }).http;
    expect(kiosk.Service!.ExecStart![0]).toMatch(/chromium .*--kiosk .*http:\/\/127\.0\.0\.1:(\d+)\/$/);
    expect(kiosk.Service!.ExecStart![0]).toContain(`http://127.0.0.1:${defaults.local.port}/`);
    expect(kiosk.Unit!.After!.join(' ')).toContain('vendgate.service');
    expect(kiosk.Service!.Restart).toEqual(['always']);
  });
  it('the service gets CPU and IO priority over the kiosk browser on the same cores', () => {
    const service = unit('vendgate.service').Service!;
    const kiosk = unit('vendgate-kiosk.service').Service!;
    expect(Number(service.CPUWeight)).toBeGreaterThanOrEqual(4 * Number(kiosk.CPUWeight));
    expect(Number(service.IOWeight)).toBeGreaterThanOrEqual(4 * Number(kiosk.IOWeight));
    expect(Number(service.Nice)).toBeLessThan(Number(kiosk.Nice));
  });

  it('the service waits for a synchronised clock: it wants and follows time-sync.target', () => {
    const service = unit('vendgate.service').Unit!;
    expect(service.After!.join(' ').split(/\s+/)).toContain('time-sync.target');
    expect(service.Wants!.join(' ').split(/\s+/)).toContain('time-sync.target');
  });

  it('every Documentation= of every unit is a page that exists in the release', () => {
    for (const name of readdirSync(SYSTEMD).filter((f) => /\.(service|timer)$/.test(f))) {
      const docs = unit(name).Unit!.Documentation ?? [];
      expect(docs.length, name).toBeGreaterThan(0);
      for (const doc of docs.flatMap((d) => d.split(/\s+/))) {
        const path = /^file:\/opt\/vendgate\/current\/(.+)$/.exec(doc)?.[1];
        expect(path, `${name}: ${doc}`).toBeDefined();
        expect(existsSync(join(REPO, path!)), `${name}: ${doc}`).toBe(true);
      }
    }
  });

  it('every docs/… page a unit, script, hint or the README names exists', () => {
    const named = new Set<string>();
    const scan = (dir: string) => {
      for (const entry of readdirSync(join(REPO, dir), { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== 'node_modules') scan(path);
          continue;
        }
        for (const match of readFileSync(join(REPO, path), 'utf8').matchAll(/\bdocs\/[\w.-]+\.md\b/g))
          named.add(`${match[0]} (in ${path})`);
      }
    };
    for (const dir of ['src', 'scripts', 'systemd', 'config']) scan(dir);
    for (const match of readFileSync(join(REPO, 'README.md'), 'utf8').matchAll(/\bdocs\/[\w.-]+\.md\b/g))
      named.add(`${match[0]} (in README.md)`);
    expect(named.size).toBeGreaterThan(0);
    for (const reference of named) expect(existsSync(join(REPO, reference.split(' ')[0]!)), reference).toBe(true);
  });

  it('vendgate-relay.service runs the relay with its own settings and secrets, restarts except on bad configuration, no watchdog', () => {
    const service = unit('vendgate-relay.service').Service!;
    expect(service.ExecStart![0]).toMatch(/dist\/vendgate\.js relay --config \/etc\/vendgate\/relay\.yaml$/);
    expect(service.EnvironmentFile).toBeUndefined();
    expect(service.LoadCredential).toEqual(['relay-secrets.env:/etc/vendgate/relay-secrets.env']);
    expect(service.Type).toEqual(['notify']);
    expect(service.Restart).toEqual(['always']);
    expect(service.RestartPreventExitStatus).toEqual(['78']);
    expect(service.DynamicUser).toEqual(['yes']);
    // main.ts pings the watchdog only for `start` (it watches the device database); the relay has none.
    expect(service.WatchdogSec).toBeUndefined();
  });
});
