import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { current, fakePiEachTest, type FakePi } from './fake-system.js';

/**
 * What a root can trust in an update (scripts/update.sh, install-pi.sh's verify_artefact), on a fake
 * Pi: small signed release tarballs made here from the built dist/ and signed by
 * scripts/release-sign.sh with a key made here, so no release build is needed.
 *  - the artefact is verified as a copy in a root-only directory and only that copy is unpacked
 *    (a file swapped beside it after the check does not get in);
 *  - only prehashed signatures whose signed comment names this version and file are accepted;
 *  - an older version is refused without --allow-downgrade; the same version has nothing to do;
 *  - the database backup goes where only root writes, whatever the service user put in its directory;
 *  - secrets.env is data: a hostile value is never run by the CLI or the update.
 */
const REPO = new URL('../../../', import.meta.url).pathname;

const pis = fakePiEachTest();

function run(command: string, args: string[], cwd?: string) {
  const result = spawnSync(command, args, { encoding: 'utf8', cwd });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

function key(p: FakePi): { secret: string; pub: string } {
  const base = join(p.root, '..', 'release-key');
  if (!existsSync(`${base}.key`)) run('minisign', ['-G', '-W', '-s', `${base}.key`, '-p', `${base}.pub`]);
  return { secret: `${base}.key`, pub: `${base}.pub` };
}

/** A signed directory holding vendgate-<version>-linux-x64.tar.gz (dist/, RELEASE, the checkout's node_modules). */
function signedTarball(p: FakePi, version: string, change?: (release: string) => void): { dir: string; tarball: string } {
  const src = p.source(version);
  writeFileSync(join(src, 'RELEASE'), `version=${version}\ncommit=test\narch=linux-x64\n`);
  symlinkSync(join(REPO, 'node_modules'), join(src, 'node_modules'));
  change?.(src);
  const dir = join(p.root, '..', `artefacts-${version}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir);
  const name = `vendgate-${version}-linux-x64.tar.gz`;
  run('tar', [
    '-czf',
    join(dir, name),
    '-C',
    join(src, '..'),
    '--transform',
    `s|^${basename(src)}|vendgate-${version}-linux-x64|`,
    basename(src),
  ]);
  run('bash', [join(REPO, 'scripts/release-sign.sh'), '--key', key(p).secret, dir]);
  return { dir, tarball: join(dir, name) };
}

async function installed(version: string): Promise<FakePi> {
  const p = await pis.fresh();
  p.writeConfig();
  const { tarball } = signedTarball(p, version);
  const install = await p.run('install-pi.sh', ['--release', tarball, '--key', key(p).pub], REPO);
  expect(install.code, install.stdout + install.stderr).toBe(0);
  return p;
}

const update = (p: FakePi, args: string[]) => p.run('update.sh', args, join(p.root, 'opt/vendgate/current'));

describe('what vendgate-update trusts', () => {
  it('unpacks the copy it verified: an artefact swapped beside it after the check does not get in', { timeout: 180_000 }, async () => {
    const pi = await installed('1.0.0');
    const { tarball } = signedTarball(pi, '1.1.0');
    const evil = signedTarball(pi, '1.1.0', (src) => writeFileSync(join(src, 'config', 'EVIL'), 'swapped in after the check\n'));
    // sha256sum as the last read of the check: right after it, the file at the path is swapped.
    const real = run('bash', ['-c', 'command -v sha256sum']).trim();
    writeFileSync(join(pi.bin, 'sha256sum'), `#!/bin/sh\n"${real}" "$@"\ncp "${evil.tarball}" "${tarball}"\n`);
    chmodSync(join(pi.bin, 'sha256sum'), 0o755);
    const result = await update(pi, [tarball]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(current(pi)).toMatch(/^1\.1\.0-/);
    expect(existsSync(join(pi.root, 'opt/vendgate/current/config/EVIL'))).toBe(false);
  });

  it('refuses a legacy (not prehashed) signature and a signed comment for another version or file', { timeout: 180_000 }, async () => {
    const pi = await installed('1.0.0');
    const before = current(pi);
    const { dir, tarball } = signedTarball(pi, '1.1.0');
    const sign = (comment: string, legacy = false) =>
      run('minisign', ['-S', ...(legacy ? ['-l'] : []), '-s', key(pi).secret, '-m', join(dir, 'SHA256SUMS'), '-t', comment]);

    sign('vendgate version=1.1.0 files=vendgate-1.1.0-linux-x64.tar.gz', true);
    const legacy = await update(pi, [tarball]);
    expect(legacy.code).toBe(1);
    expect(legacy.stderr).toMatch(/not prehashed.*Nothing was changed/);

    sign('vendgate version=0.9.0 files=vendgate-1.1.0-linux-x64.tar.gz');
    const otherVersion = await update(pi, [tarball]);
    expect(otherVersion.code).toBe(1);
    expect(otherVersion.stderr).toMatch(/is not for vendgate 1\.1\.0: refusing .*Nothing was changed/);

    sign('vendgate version=1.1.0 files=vendgate-1.1.0-linux-arm64.tar.gz');
    const otherFile = await update(pi, [tarball]);
    expect(otherFile.code).toBe(1);
    expect(otherFile.stderr).toMatch(/does not name vendgate-1\.1\.0-linux-x64\.tar\.gz/);
    expect(current(pi)).toBe(before);
  });

  it('refuses an older release unless --allow-downgrade (logged), and says when there is nothing to do', { timeout: 240_000 }, async () => {
    const pi = await installed('1.1.0');
    const before = current(pi);
    const same = signedTarball(pi, '1.1.0');
    const nothing = await update(pi, [same.tarball]);
    expect(nothing.code, nothing.stdout + nothing.stderr).toBe(0);
    expect(nothing.stdout).toContain('vendgate 1.1.0 is already installed: nothing to do');
    expect(current(pi)).toBe(before);

    const old = signedTarball(pi, '1.0.0');
    const refused = await update(pi, [old.tarball]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('is version 1.0.0, older than the installed 1.1.0: refusing a downgrade');
    expect(current(pi)).toBe(before);
    expect(pi.calls().filter((call) => call.startsWith('systemctl stop'))).toEqual([]);

    const allowed = await update(pi, [old.tarball, '--allow-downgrade']);
    expect(allowed.code, allowed.stdout + allowed.stderr).toBe(0);
    expect(allowed.stderr).toContain('downgrading from 1.1.0 to 1.0.0 (--allow-downgrade)');
    expect(current(pi)).toMatch(/^1\.0\.0-/);
  });

  it('backs the database up where only root writes: a symlink the service user left is not followed', { timeout: 180_000 }, async () => {
    const pi = await installed('1.0.0');
    // The service user's directory: the old backup path made a link to a directory of root's.
    const victim = join(pi.root, 'etc/root-only');
    mkdirSync(victim, { mode: 0o700 });
    symlinkSync(victim, join(pi.root, 'var/lib/vendgate/backups'));
    const { tarball } = signedTarball(pi, '1.1.0');
    const result = await update(pi, [tarball]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(readdirSync(victim)).toEqual([]);
    expect(statSync(victim).mode & 0o777).toBe(0o700);
    const backups = join(pi.root, 'var/backups/vendgate');
    expect(statSync(backups).mode & 0o777).toBe(0o700);
    const [backup] = readdirSync(backups);
    expect(backup).toMatch(/^vendgate-\d{8}T\d{6}Z\.db$/);
    expect(statSync(join(backups, backup!)).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(pi.root, 'var/lib/vendgate')).filter((name) => name.startsWith('.backup-'))).toEqual([]);
  });

  it('reads secrets.env as data: a hostile value is never run by the CLI or by the update', { timeout: 180_000 }, async () => {
    const pi = await installed('1.0.0');
    const marker = join(pi.root, '..', 'pwned');
    writeFileSync(join(pi.root, 'etc/vendgate/secrets.env'), `VENDGATE_WEBHOOK_SECRETS=$(touch ${marker}),\`touch ${marker}\`\n`);
    const cli = await pi.exec(join(pi.root, 'usr/local/bin/vendgate'), ['--version']);
    expect(cli.code, cli.stderr).toBe(0);
    const { tarball } = signedTarball(pi, '1.1.0');
    const result = await update(pi, [tarball]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(join(pi.root, 'usr/local/bin/vendgate'), 'utf8')).not.toMatch(/\. .*secrets\.env/);
  });
});
