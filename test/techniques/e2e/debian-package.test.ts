import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDebian, debianRootCache, type BootedDebian } from '../../helpers/debian-root.js';
import { nextRelease, sharedRelease, type SharedRelease } from '../../helpers/release-build.js';
import { tempDir } from '../../helpers/temp.js';

/**
 * The .deb on a real, booted Debian, as a technician uses it: a bookworm root from Debian's packages
 * (debootstrap, cached) booted with systemd (systemd-nspawn --boot), no Node.js installed, no
 * third-party repository, no stand-in for apt, dpkg or systemctl. In one boot, in order:
 *   `apt install ./vendgate_<v>_amd64.deb` → configured, the unit active on the release's own node,
 *   `vendgate selftest` passing; `vendgate-update` to a newer signed .deb → health-gated switch, a
 *   backup where only root writes; the same again → "nothing to do"; the older one → refused;
 *   `apt remove` → service gone, configuration and data kept; `apt purge` → both gone.
 * The release is the shared build of this tree (test/helpers/release-build.ts).
 */
let release: SharedRelease;
let debian: BootedDebian;
let work: ReturnType<typeof tempDir>;
const timings: string[] = [];

async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const result = await step();
  timings.push(`${what} ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return result;
}

beforeAll(async () => {
  work = tempDir('vendgate-debian-pkg-');
  release = await timed('release build (shared)', () => sharedRelease());
  await timed('Debian root (cached)', async () => debianRootCache());
  debian = await timed('boot', () => bootDebian('vg-deb'));
}, 3_600_000);

afterAll(async () => {
  await debian?.stop();
  work?.cleanup();
  console.log(`debian-package: ${timings.join(', ')}`);
});

const active = async () => (await debian.sh('systemctl is-active vendgate.service')).stdout.trim();
const status = async () => (await debian.sh("dpkg-query -W -f='${Status} ${Version}' vendgate")).stdout.trim();
const put = (from: string, dir: string) => {
  mkdirSync(join(debian.root, 'root', dir), { recursive: true });
  copyFileSync(from, join(debian.root, 'root', dir, from.split('/').at(-1)!));
};

describe('the .deb on a booted Debian bookworm with systemd', () => {
  it('apt install ./vendgate_<v>_amd64.deb configures it: the unit is active on the release’s own Node and the selftest passes', async () => {
    expect((await debian.sh('command -v node nodejs || echo none')).stdout.trim()).toBe('none');
    const deb = `vendgate_${release.version}_amd64.deb`;
    put(join(release.dir, deb), '.');
    const install = await timed('apt install', () => debian.sh(`DEBIAN_FRONTEND=noninteractive apt install -y ./${deb}`));
    expect(install.code, install.stdout + install.stderr).toBe(0);
    expect(install.stdout).toContain('==> Installing the application');
    expect(install.stdout).toMatch(/OK: nothing failed/);
    expect(await status()).toBe(`install ok installed ${release.version}`);
    expect(await active()).toBe('active');
    const node = await debian.sh('/opt/vendgate/current/node/bin/node --version; systemctl show -p ExecStart --value vendgate.service');
    expect(node.stdout).toMatch(/^v22\.\d+\.\d+\n/);
    expect(node.stdout).toContain('path=/opt/vendgate/current/node/bin/node');
    // No V8 flag on the command line (the service sets its compilers itself: src/v8-tiering.ts), and
    // the unit's memory limit on its cgroup.
    const argv = await debian.sh('tr "\\0" " " < /proc/"$(systemctl show -p MainPID --value vendgate.service)"/cmdline');
    expect(argv.stdout).toContain('/opt/vendgate/current/node/bin/node /opt/vendgate/current/dist/vendgate.js start');
    expect((await debian.sh('systemctl show -p MemoryMax --value vendgate.service')).stdout.trim()).toBe(String(256 * 1024 * 1024));
    expect((await debian.sh('ls /etc/systemd/system/vendgate.service.d/')).stdout).not.toContain('node-flags.conf');
    const selftest = await timed('selftest', () => debian.sh('vendgate selftest --expect-service'));
    expect(selftest.code, selftest.stdout + selftest.stderr).toBe(0);
    expect(selftest.stdout).toMatch(/OK: nothing failed/);
    expect((await debian.sh('cat /etc/vendgate/release-key.pub')).stdout).toContain('minisign public key');
  });

  it('vendgate-update to a newer signed .deb switches health-gated; the same again has nothing to do; the older one is refused', async () => {
    const version = `${release.version}.1`;
    const next = nextRelease(release, version, join(work.path, 'next'));
    for (const name of [next, join(work.path, 'next', 'SHA256SUMS'), join(work.path, 'next', 'SHA256SUMS.minisig')]) put(name, 'next');
    const update = await timed('vendgate-update', () => debian.sh(`vendgate-update /root/next/vendgate_${version}_amd64.deb`));
    expect(update.code, update.stdout + update.stderr).toBe(0);
    expect(update.stdout).toContain(`signature and checksum good: vendgate_${version}_amd64.deb, version ${version}`);
    expect(update.stdout).toMatch(/database backed up to \/var\/backups\/vendgate\/vendgate-\d{8}T\d{6}Z\.db \(VACUUM INTO\)/);
    expect(update.stdout).toMatch(/Updated: \S+ → \S+/);
    expect(await status()).toBe(`install ok installed ${version}`);
    expect((await debian.sh('sed -n s/^version=//p /opt/vendgate/current/RELEASE')).stdout.trim()).toBe(version);
    expect(await active()).toBe('active');
    expect((await debian.sh('stat -c %U:%a /var/backups/vendgate')).stdout.trim()).toBe('root:700');

    const again = await debian.sh(`vendgate-update /root/next/vendgate_${version}_amd64.deb`);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain(`vendgate ${version} is already installed: nothing to do`);

    for (const name of [`vendgate_${release.version}_amd64.deb`, 'SHA256SUMS', 'SHA256SUMS.minisig']) put(join(release.dir, name), 'old');
    const older = await debian.sh(`vendgate-update /root/old/vendgate_${release.version}_amd64.deb`);
    expect(older.code).toBe(1);
    expect(older.stderr).toContain(`older than the installed ${version}: refusing a downgrade`);
    expect(await status()).toBe(`install ok installed ${version}`);
    // Nothing outside dpkg's knowledge on the PATH.
    expect((await debian.sh('ls /usr/local/bin')).stdout.trim()).toBe('');
  });

  it('apt remove stops it and keeps the configuration and the data; apt purge removes them', async () => {
    const remove = await timed('apt remove', () => debian.sh('DEBIAN_FRONTEND=noninteractive apt remove -y vendgate'));
    expect(remove.code, remove.stdout + remove.stderr).toBe(0);
    expect(await status()).toMatch(/^deinstall ok config-files /);
    expect(await active()).not.toBe('active');
    const kept = await debian.sh(
      'ls /var/lib/vendgate/vendgate.db /etc/vendgate/config.yaml /etc/vendgate/secrets.env; ls /opt/vendgate /etc/systemd/system/vendgate.service 2>&1 || true',
    );
    expect(kept.stdout).toContain('/var/lib/vendgate/vendgate.db');
    expect(kept.stdout).toContain('/etc/vendgate/config.yaml');
    expect(kept.stdout).toMatch(/cannot access '\/opt\/vendgate'/);
    expect(kept.stdout).toMatch(/cannot access '\/etc\/systemd\/system\/vendgate\.service'/);

    const purge = await timed('apt purge', () => debian.sh('DEBIAN_FRONTEND=noninteractive apt purge -y vendgate'));
    expect(purge.code, purge.stdout + purge.stderr).toBe(0);
    expect((await debian.sh('dpkg-query -W vendgate 2>&1 || true')).stdout + '').toMatch(/no packages found matching vendgate/);
    const gone = await debian.sh('ls -d /var/lib/vendgate /etc/vendgate /var/backups/vendgate 2>&1 || true');
    expect(gone.stdout.match(/cannot access/g)).toHaveLength(3);
  });
});
