import { appendFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { current, fakePiEachTest, type FakePi } from './fake-system.js';

// Each test starts on a fresh fake Pi with the source of release 1.0.0 beside it.
const pis = fakePiEachTest();
let pi: FakePi;
let src: string;
beforeEach(async () => {
  pi = await pis.fresh();
  src = pi.source('1.0.0');
});

// scripts/update.sh on the same fake Pi: update.test.ts and update-faults.test.ts (three files, so that
// two workers share their minutes).
describe('scripts/install-pi.sh', () => {
  it('takes a Raspberry Pi to a running, enabled service that passes its selftest', async () => {
    const result = await pi.run('install-pi.sh', ['--example', 'test-device'], src);

    expect(result.stderr).not.toMatch(/error/);
    expect(result.code).toBe(0);
    for (const step of [
      'Checking the machine',
      'Checking Node.js',
      'Installing the build tools',
      'Creating the service user',
      'Installing the application',
      'systemd units',
      'Starting vendgate',
      'Selftest',
      'Done',
    ]) {
      expect(result.stdout).toContain(`==> ${step}`);
    }
    expect(result.stdout).toMatch(/^PASS +local\.listener/m);
    expect(result.stdout).toMatch(/OK: nothing failed/);
    const calls = pi.calls();
    expect(calls).toContainEqual(expect.stringMatching(/^apt-get install -y -qq build-essential python3 gpiod$/));
    expect(calls).toContainEqual(expect.stringMatching(/^useradd --system .* vendgate$/));
    expect(calls).toContain('usermod -a -G gpio,dialout vendgate');
    expect(calls).toContain('npm ci --omit=dev --no-audit --no-fund');
    expect(calls).toContain('systemctl enable vendgate.service');
    expect(current(pi)).toMatch(/^1\.0\.0-/);
    expect(pi.read('etc/vendgate/config.yaml')).toContain('pi-test');
    expect(pi.exists('etc/vendgate/secrets.env')).toBe(true);
    expect(pi.read('etc/systemd/system/vendgate.service')).toContain('Type=notify');
    // Installed for a fleet's node_exporter, not enabled (it needs prometheus-node-exporter).
    expect(pi.exists('etc/systemd/system/vendgate-metrics-textfile.timer')).toBe(true);
    expect(pi.calls()).not.toContainEqual(expect.stringContaining('enable --now vendgate-metrics-textfile'));
    expect(pi.read('usr/local/bin/vendgate')).toContain('/opt/vendgate/current/dist/vendgate.js');
  });

  it('is safe to run again: configuration and secrets are kept, the user is not created twice', async () => {
    expect((await pi.run('install-pi.sh', ['--example', 'test-device'], src)).code).toBe(0);
    appendFileSync(join(pi.root, 'etc/vendgate/config.yaml'), '# edited by the technician\n');
    writeFileSync(join(pi.root, 'etc/vendgate/secrets.env'), 'VENDGATE_WEBHOOK_SECRETS=whsec_kept\n');

    const again = await pi.run('install-pi.sh', ['--example', 'test-device'], src);

    expect(again.code).toBe(0);
    expect(again.stdout).toContain('config.yaml exists: left as it is');
    expect(pi.read('etc/vendgate/config.yaml')).toContain('# edited by the technician');
    expect(pi.read('etc/vendgate/secrets.env')).toBe('VENDGATE_WEBHOOK_SECRETS=whsec_kept\n');
    expect(pi.calls().filter((c) => c.startsWith('useradd'))).toHaveLength(1);
    expect(again.stdout).toMatch(/OK: nothing failed/);
  });

  it(
    '--tunnel HOSTNAME sets up cloudflared on the Pi itself: Debian repository, login, tunnel, DNS route, config, unit; a re-run reuses all of it',
    { timeout: 120_000 },
    async () => {
      const result = await pi.run('install-pi.sh', ['--example', 'test-device', '--tunnel', 'pay-pi-test.example.com'], src);

      expect(result.stderr).not.toMatch(/error/);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('==> Cloudflare Tunnel for pay-pi-test.example.com');
      expect(result.stdout).toContain('https://dash.cloudflare.com/argotunnel');
      const calls = pi.calls();
      expect(calls).toContainEqual(
        expect.stringMatching(
          /^curl -fsSL https:\/\/pkg\.cloudflare\.com\/cloudflare-main\.gpg -o .*\/usr\/share\/keyrings\/cloudflare-main\.gpg$/,
        ),
      );
      expect(pi.read('etc/apt/sources.list.d/cloudflared.list')).toBe(
        'deb [signed-by=/usr/share/keyrings/cloudflare-main.gpg] https://pkg.cloudflare.com/cloudflared any main\n',
      );
      expect(calls).toContain('apt-get install -y -qq cloudflared');
      expect(calls).toContain('cloudflared tunnel login');
      expect(calls).toContainEqual(
        expect.stringMatching(
          /^cloudflared --origincert .*\/etc\/vendgate\/cloudflared-cert\.pem tunnel create --credentials-file .*\/etc\/vendgate\/tunnel\.json vendgate-pi-test$/,
        ),
      );
      expect(calls).toContainEqual(
        expect.stringMatching(/tunnel route dns 6f1c2d3e-0000-4000-8000-00000000abcd pay-pi-test\.example\.com$/),
      );
      const config = pi.read('etc/vendgate/cloudflared.yml');
      expect(config).toMatch(/^tunnel: 6f1c2d3e-0000-4000-8000-00000000abcd$/m);
      expect(config).toContain('- hostname: pay-pi-test.example.com\n    path: ^/webhooks/\n    service: http://127.0.0.1:8787');
      expect(config).toContain('- service: http_status:404');
      expect(calls).toContain('systemctl enable --now vendgate-tunnel.service');
      expect(result.stdout).toContain('http.webhook.publicUrl: https://pay-pi-test.example.com');
      // The account certificate (it manages the whole zone) does not stay on the device.
      expect(pi.exists('etc/vendgate/cloudflared-cert.pem')).toBe(false);
      expect(existsSync(join(pi.env.HOME!, '.cloudflared/cert.pem'))).toBe(false);
      expect(result.stdout).toContain('deleted the Cloudflare account certificate');

      const again = await pi.run('install-pi.sh', ['--example', 'test-device', '--tunnel', 'pay-pi-test.example.com'], src);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain('tunnel.json exists: reusing that tunnel');
      expect(again.stdout).toContain('cloudflared.yml exists: left as it is');
      expect(pi.calls().filter((c) => c.includes('tunnel create'))).toHaveLength(1);
      expect(pi.calls().filter((c) => c === 'cloudflared tunnel login')).toHaveLength(1);
    },
  );

  it(
    '--tunnel-only HOSTNAME (what vendgate setup runs) on an installed device sets up only the tunnel: no machine check, no packages, no new release, no command or units written, no restart',
    { timeout: 120_000 },
    async () => {
      const install = await pi.run('install-pi.sh', ['--example', 'test-device'], src);
      expect(install.code, install.stderr).toBe(0);
      const release = current(pi);
      const releases = readdirSync(join(pi.root, 'opt/vendgate/releases'));
      const cli = pi.read('usr/local/bin/vendgate');
      const before = pi.calls().length;
      // An amd64 .deb install is not a Pi: the whole install-pi.sh would stop at its machine check.
      rmSync(join(pi.root, 'proc/device-tree/model'));
      rmSync(join(pi.root, 'usr/local/bin/vendgate'));

      const result = await pi.run('install-pi.sh', ['--tunnel-only', 'pay-pi-test.example.com'], src);

      expect(result.stderr).not.toMatch(/error/);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('==> Cloudflare Tunnel for pay-pi-test.example.com');
      expect(result.stdout).not.toContain('==> Checking the machine');
      const calls = pi.calls().slice(before);
      expect(calls).toContain('cloudflared tunnel login');
      expect(calls).toContain('systemctl enable --now vendgate-tunnel.service');
      expect(pi.read('etc/vendgate/cloudflared.yml')).toContain('- hostname: pay-pi-test.example.com');
      // Nothing else of the install ran.
      expect(calls.filter((c) => c.startsWith('apt-get') && !c.includes('cloudflared') && c !== 'apt-get update -qq')).toEqual([]);
      expect(calls.filter((c) => /^(systemctl (restart|daemon-reload|enable vendgate)|useradd|npm)/.test(c))).toEqual([]);
      expect(current(pi)).toBe(release);
      expect(readdirSync(join(pi.root, 'opt/vendgate/releases'))).toEqual(releases);
      expect(pi.exists('usr/local/bin/vendgate'), "no /usr/local/bin/vendgate over the package's /usr/bin/vendgate").toBe(false);
      expect(cli).toContain('vendgate');
      expect(result.stdout).toContain('sudo systemctl restart vendgate && sudo vendgate selftest');
    },
  );

  it('--tunnel-only refuses a device where vendgate is not installed, and other options beside it', async () => {
    const fresh = await pi.run('install-pi.sh', ['--tunnel-only', 'pay-pi-test.example.com'], src);
    expect(fresh.code).toBe(1);
    expect(fresh.stderr).toContain('vendgate is not installed here');
    expect(pi.calls().filter((c) => c.startsWith('cloudflared') || c.startsWith('apt-get'))).toEqual([]);
    const mixed = await pi.run('install-pi.sh', ['--tunnel-only', 'pay-pi-test.example.com', '--kiosk'], src);
    expect(mixed.code).toBe(1);
    expect(mixed.stderr).toContain('--tunnel-only takes no other option');
  });

  it('--tunnel refuses something that is not a host name', async () => {
    const result = await pi.run('install-pi.sh', ['--tunnel', 'x/y; rm -rf /'], src);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('is not a host name');
  });

  it('waits for a synchronised clock: enables systemd-time-wait-sync with a 90 s limit', { timeout: 120_000 }, async () => {
    expect((await pi.run('install-pi.sh', ['--example', 'test-device'], src)).code).toBe(0);
    expect(pi.calls()).toContain('systemctl enable systemd-time-wait-sync.service');
    expect(pi.read('etc/systemd/system/systemd-time-wait-sync.service.d/vendgate.conf')).toBe('[Service]\nTimeoutStartSec=90s\n');
  });

  it(
    "says whether the kernel's memory controller holds the unit's MemoryMax= (Raspberry Pi OS boots with it off), and removes an earlier release's node-flags.conf",
    { timeout: 120_000 },
    async () => {
      // An earlier release wrote this drop-in for its VENDGATE_NODE22_FLAGS line, which the unit no longer has.
      const dropin = 'etc/systemd/system/vendgate.service.d/node-flags.conf';
      mkdirSync(join(pi.root, 'etc/systemd/system/vendgate.service.d'), { recursive: true });
      writeFileSync(join(pi.root, dropin), '[Service]\nEnvironment=VENDGATE_NODE22_FLAGS=\n');

      // A system node other than /usr/bin/node (the unit's): it gets the drop-in node.conf.
      writeFileSync(join(pi.bin, 'node'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} "$@"\n`, { mode: 0o755 });

      // /proc/cgroups as Raspberry Pi OS has it: the memory controller built in, disabled at boot.
      mkdirSync(join(pi.root, 'proc'), { recursive: true });
      const cgroups = (memoryEnabled: 0 | 1) =>
        writeFileSync(
          join(pi.root, 'proc/cgroups'),
          `#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t0\t95\t1\ncpu\t0\t95\t1\nmemory\t0\t95\t${memoryEnabled}\npids\t0\t95\t1\n`,
        );
      cgroups(0);
      const off = await pi.run('install-pi.sh', ['--example', 'test-device'], src);
      expect(off.code).toBe(0);
      expect(off.stderr).toMatch(/warning: the kernel's memory controller is off .*cgroup_enable=memory/);
      expect(off.stdout).toMatch(/OK: nothing failed/);
      expect(pi.exists(dropin)).toBe(false);
      // The node that is not /usr/bin/node gets the unit's ExecStart, with no V8 flag of its own.
      expect(pi.read('etc/systemd/system/vendgate.service.d/node.conf')).toContain(
        ' $VENDGATE_NODE_FLAGS /opt/vendgate/current/dist/vendgate.js start',
      );

      cgroups(1);
      const on = await pi.run('install-pi.sh', ['--example', 'test-device'], src);
      expect(on.code).toBe(0);
      expect(on.stderr).not.toContain('memory controller is off');
      expect(on.stdout).toContain('memory controller on: the service is held to MemoryMax=256M');

      // cgroup v2 (a kernel booted with cgroup_enable=memory): the root's controllers list it.
      cgroups(0);
      mkdirSync(join(pi.root, 'sys/fs/cgroup'), { recursive: true });
      writeFileSync(join(pi.root, 'sys/fs/cgroup/cgroup.controllers'), 'cpuset cpu io memory pids\n');
      const v2 = await pi.run('install-pi.sh', ['--example', 'test-device'], src);
      expect(v2.stdout).toContain('memory controller on');
    },
  );

  it('stops at the first problem with a clear message: not a Pi, Node too old', async () => {
    writeFileSync(join(pi.root, 'proc/device-tree/model'), 'Generic x86 PC\0');

    const notPi = await pi.run('install-pi.sh', [], src);
    expect(notPi.code).toBe(1);
    expect(notPi.stderr).toMatch(/install-pi\.sh: error: this is not a Raspberry Pi \(Generic x86 PC\)/);
    expect(pi.calls()).toEqual([]);

    writeFileSync(join(pi.root, 'proc/device-tree/model'), 'Raspberry Pi 3 Model B Rev 1.2\0');
    writeFileSync(join(pi.bin, 'node'), '#!/bin/sh\necho v18.19.0\n', { mode: 0o755 });
    const oldNode = await pi.run('install-pi.sh', [], src);
    expect(oldNode.code).toBe(1);
    expect(oldNode.stderr).toMatch(/Node v18\.19\.0 is too old .*deb\.nodesource\.com\/setup_22\.x/);
    expect(pi.calls()).toEqual([]);
  });
});
