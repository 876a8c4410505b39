import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  closeSync,
  writeFileSync,
  readlinkSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort, orderState, paidOrder, startService, type Service } from '../../helpers/service.js';
import { tempDir } from '../../helpers/temp.js';
import { nextRelease, sharedRelease, type SharedRelease } from '../../helpers/release-build.js';
import { fakePi, type FakePi } from '../../repo/scripts/fake-system.js';

/**
 * `npm run release` (scripts/release.sh) and what it makes, tested as a technician gets it. The
 * release is the shared build of this tree (test/helpers/release-build.ts: built once per source
 * hash, both architectures, reused by every test that needs it), then
 * - the signature (prehashed, its signed comment naming the version and each file) and checksums
 *   verify, the .deb's control data, files and modes are right, and it depends on no nodejs;
 * - each architecture's tarball, unpacked in a temp directory away from the checkout (no access to its
 *   node_modules), runs on its own pinned Node — x64 natively, arm64 under qemu user emulation:
 *   --version, a migration, a sandbox order to a simulated vend;
 * - on a fake Pi (test/scripts/fake-system.ts) the .deb installs in one step and updates health-gated,
 *   and a tampered artefact or sums file is refused with nothing changed. The real dpkg, apt and
 *   systemd: debian-package.test.ts.
 * Needs scripts/install-test-deps.sh (minisign, dpkg-deb, g++, g++-aarch64-linux-gnu, qemu-user) and
 * the npm registry (node-linux-<arch> at the version scripts/node-runtime.lock pins).
 */
const REPO = new URL('../../../', import.meta.url).pathname;
const NODE_PIN = /^version=(\S+)$/m.exec(readFileSync(join(REPO, 'scripts/node-runtime.lock'), 'utf8'))![1]!;
let VERSION: string;
const ARCHES = ['x64', 'arm64'] as const;
const DEB_ARCH = { x64: 'amd64', arm64: 'arm64' } as const;
const ELF_MACHINE = { x64: 0x3e, arm64: 0xb7 } as const;

let work: ReturnType<typeof tempDir>;
let out: string;
let key: { secret: string; pub: string };
let shared: SharedRelease;

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The release's own node (unpacked from the tarball at `release`), arm64 under qemu. */
function nodeOf(arch: (typeof ARCHES)[number], release: string): string[] {
  const node = join(release, 'node', 'bin', 'node');
  return arch === 'x64' ? [node] : ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu', node];
}

/** The pinned x64 node that release.sh checked and keeps in its work directory (for the fake Pi's PATH). */
const hostNode = () => join(out, '.work', `node-x64-${NODE_PIN}`, 'bin', 'node');

const escapeRe = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function elfMachine(path: string): number {
  const fd = openSync(path, 'r');
  const header = Buffer.alloc(20);
  readSync(fd, header, 0, 20, 0);
  closeSync(fd);
  expect(header.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
  return header.readUInt16LE(18);
}

beforeAll(async () => {
  work = tempDir('vendgate-release-');
  shared = await sharedRelease();
  out = shared.dir;
  key = shared.key;
  VERSION = shared.version;
  console.log(
    `npm run release (both architectures): ${shared.fromCache ? 'from the shared cache' : (shared.output.match(/release\.sh: .*/)?.[0] ?? `${shared.seconds.toFixed(0)} s`)}`,
  );
}, 3_600_000);

afterAll(() => work?.cleanup());

describe('npm run release', () => {
  it('makes a .deb and a tarball for linux-x64 and linux-arm64, SHA256SUMS, its signature and the public key, all of their own version', () => {
    expect(shared.output).not.toMatch(/error/);
    // package.json's version, then the commit's time and hash: every build its own, later ones higher.
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+\+\d{14}(\.g[0-9a-f]{12}(\.dirty)?)?$/);
    expect(
      readdirSync(out)
        .filter((name) => !name.startsWith('.'))
        .sort(),
    ).toEqual(
      [
        'SHA256SUMS',
        'SHA256SUMS.minisig',
        'release-key.pub',
        `vendgate-${VERSION}-linux-arm64.tar.gz`,
        `vendgate-${VERSION}-linux-x64.tar.gz`,
        `vendgate_${VERSION}_amd64.deb`,
        `vendgate_${VERSION}_arm64.deb`,
      ].sort(),
    );
    const verify = run('minisign', ['-V', '-H', '-p', key.pub, '-m', join(out, 'SHA256SUMS')]);
    expect(verify.stdout + verify.stderr).toContain('Signature and comment signature verified');
    const files = [
      `vendgate-${VERSION}-linux-arm64.tar.gz`,
      `vendgate-${VERSION}-linux-x64.tar.gz`,
      `vendgate_${VERSION}_amd64.deb`,
      `vendgate_${VERSION}_arm64.deb`,
    ];
    expect(verify.stdout).toContain(`Trusted comment: vendgate version=${VERSION} files=${files.join(',')}`);
    expect(verify.code).toBe(0);
    const sums = run('sha256sum', ['-c', 'SHA256SUMS'], { cwd: out });
    expect(sums.code, sums.stdout + sums.stderr).toBe(0);
    expect(sums.stdout.trim().split('\n')).toHaveLength(4);
  });

  for (const arch of ARCHES) {
    it(`the ${DEB_ARCH[arch]} .deb: depends on Debian packages only, holds the release with its own Node, the command and maintainer scripts, all root-owned and not writable by others`, () => {
      const deb = join(out, `vendgate_${VERSION}_${DEB_ARCH[arch]}.deb`);
      const field = (name: string) => run('dpkg-deb', ['-f', deb, name]).stdout.trim();
      expect(field('Package')).toBe('vendgate');
      expect(field('Version')).toBe(VERSION);
      expect(field('Architecture')).toBe(DEB_ARCH[arch]);
      expect(field('Depends')).toBe('systemd, passwd, minisign');
      const listing = run('dpkg-deb', ['-c', deb]).stdout.trim().split('\n');
      const entry = (path: string) => listing.find((line) => line.endsWith(` ./${path}`) || line.includes(` ./${path} -> `));
      for (const path of [
        'usr/lib/vendgate/release/dist/vendgate.js',
        'usr/lib/vendgate/release/dist/store/migrations/',
        'usr/lib/vendgate/release/systemd/vendgate.service',
        'usr/lib/vendgate/release/config/default.yaml',
        'usr/lib/vendgate/release/config/examples/sandbox.yaml',
        'usr/lib/vendgate/release/config/release-key.pub',
        'usr/lib/vendgate/release/scripts/package-postinst.sh',
        'usr/lib/vendgate/release/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
        'usr/lib/vendgate/release/node_modules/epoll/build/Release/epoll.node',
        'usr/lib/vendgate/release/node_modules/@serialport/bindings-cpp/build/Release/bindings.node',
        'usr/lib/vendgate/release/node_modules/pino-pretty/package.json',
        'usr/lib/vendgate/release/node/bin/node',
        'usr/lib/vendgate/release/node/LICENSE',
      ])
        expect(entry(path), path).toBeDefined();
      // Only what the bundle loads: fastify, zod, mqtt, pino … are inside dist/vendgate.js.
      for (const bundled of ['fastify', 'zod', 'mqtt', 'yaml', 'pino', '@types'])
        expect(
          listing.some((line) => line.includes(`/release/node_modules/${bundled}/`)),
          bundled,
        ).toBe(false);
      expect(entry('usr/bin/vendgate')).toMatch(/^-rwxr-xr-x root\/root/);
      expect(entry('usr/bin/vendgate-update')).toMatch(/-> \/usr\/lib\/vendgate\/release\/scripts\/update\.sh$/);
      for (const line of listing) {
        expect(line, line).toMatch(/^(?:[d-]rw[x-]r-[x-]r-[x-]|lrwxrwxrwx) root\/root /);
      }
      // Nothing compiled that is not needed on the device.
      expect(listing.some((line) => line.includes('better-sqlite3/deps/'))).toBe(false);
      const control = join(work.path, `control-${arch}`);
      expect(run('dpkg-deb', ['-e', deb, control]).code).toBe(0);
      // dpkg's arguments ("configure <old-version>") reach package-postinst.sh whole.
      expect(readFileSync(join(control, 'postinst'), 'utf8')).toContain(
        'configure) exec bash /usr/lib/vendgate/release/scripts/package-postinst.sh "$@" ;;',
      );
      for (const script of ['postinst', 'prerm', 'postrm']) expect(run('sh', ['-n', join(control, script)]).code, script).toBe(0);
      expect(readFileSync(join(control, 'postrm'), 'utf8')).toMatch(/purge\)[\s\S]*rm -rf \/etc\/vendgate \/var\/lib\/vendgate/);
    });

    it(
      `linux-${arch}, unpacked away from the checkout, on its own Node ${NODE_PIN}${arch === 'arm64' ? ' under qemu-aarch64' : ''}: --version, a migration, a sandbox order to a simulated vend`,
      { timeout: 600_000 },
      async () => {
        const place = tempDir(`vendgate-${arch}-`);
        let svc: Service | null = null;
        try {
          expect(run('tar', ['-xzf', join(out, `vendgate-${VERSION}-linux-${arch}.tar.gz`), '-C', place.path]).code).toBe(0);
          const release = join(place.path, `vendgate-${VERSION}-linux-${arch}`);
          expect(release.startsWith(REPO)).toBe(false);
          for (const native of [
            'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
            'node_modules/epoll/build/Release/epoll.node',
            'node_modules/@serialport/bindings-cpp/build/Release/bindings.node',
          ])
            expect(elfMachine(join(release, native)), native).toBe(ELF_MACHINE[arch]);
          const [node, ...pre] = nodeOf(arch, release);
          const bundle = join(release, 'dist/vendgate.js');

          const version = run(node!, [...pre, bundle, '--version'], { cwd: release });
          expect(version.stderr).toBe('');
          expect(version.stdout).toMatch(new RegExp(`^vendgate ${escapeRe(VERSION)} \\(commit \\S+, node v${escapeRe(NODE_PIN)}\\)`));

          const dir = join(place.path, 'device');
          mkdirSync(dir);
          const config = join(dir, 'migrate.yaml');
          writeFileSync(
            config,
            stringify({
              device: { id: `rel-${arch}`, mode: 'vending', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
              provider: { name: 'sandbox' },
              http: { local: { host: '127.0.0.1', port: await freePort() }, webhook: { host: '127.0.0.1', port: await freePort() } },
              storage: { path: join(dir, 'vendgate.db') },
              actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl') } },
              mqtt: { url: '' },
            }),
          );
          // The newest migration's number (numbers may skip one: a branch that needed none)
          const migrations = Math.max(
            ...readdirSync(join(release, 'dist/store/migrations'))
              .filter((name) => name.endsWith('.sql'))
              .map((name) => Number.parseInt(name, 10)),
          );
          const migrate = run(node!, [...pre, bundle, 'migrate', '--config', config], { cwd: release });
          expect(migrate.stderr).toBe('');
          expect(migrate.code).toBe(0);
          expect(migrate.stdout).toMatch(new RegExp(`schema version ${migrations} \\(latest ${migrations}\\)`));

          svc = await startService({
            main: bundle,
            node: nodeOf(arch, release),
            cwd: release,
            dir,
            config: { device: { id: `rel-${arch}` } },
            readyTimeoutMs: 180_000,
          });
          const order = await paidOrder(svc.localUrl, 'A1');
          await svc.waitFor(async () => (await orderState(svc!.localUrl, order.orderId)) === 'vended', {
            timeoutMs: 120_000,
            what: 'the order to be vended',
          });
          expect(svc.readSimLog()).toEqual([expect.objectContaining({ orderId: order.orderId, slot: 'A1' })]);
          // It ran from the release: nothing resolved into the checkout.
          expect(svc.logs().some((line) => JSON.stringify(line).includes(REPO))).toBe(false);
        } finally {
          await svc?.stop();
          place.cleanup();
        }
      },
    );
  }
});

describe('the release on a (fake) Pi', () => {
  let pi: FakePi | null = null;
  afterEach(async () => {
    await pi?.cleanup();
    pi = null;
  });
  const current = (p: FakePi) => basename(readlinkSync(join(p.root, 'opt/vendgate/current')));
  const here = (p: FakePi) => {
    const dir = join(p.root, '..', `artefacts-${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir);
    for (const name of readdirSync(out).filter((n) => !n.startsWith('.'))) cpSync(join(out, name), join(dir, name));
    return dir;
  };

  it(
    'installs from the .deb in one step (running, selftest passing, key kept for updates) and updates from the next .deb health-gated',
    { timeout: 600_000 },
    async () => {
      pi = await fakePi();
      pi.useNode(hostNode());
      pi.writeConfig();
      const dir = here(pi);
      const deb = join(dir, `vendgate_${VERSION}_amd64.deb`);

      // sudo apt install ./vendgate_<v>_amd64.deb
      const install = await pi.exec('apt-get', ['install', '-y', deb]);
      expect(install.stderr).not.toMatch(/error/);
      expect(install.code, install.stdout + install.stderr).toBe(0);
      expect(install.stdout).toContain('==> Installing the application');
      expect(install.stdout).toMatch(/OK: nothing failed/);
      expect(install.stdout).toContain('next, the guided step (provider, credentials, tunnel; docs/install.md): sudo vendgate setup');
      const first = current(pi);
      expect(first).toMatch(new RegExp(`^${escapeRe(VERSION)}-`));
      expect(pi.read('etc/vendgate/release-key.pub')).toBe(readFileSync(key.pub, 'utf8'));
      expect(pi.read('etc/systemd/system/vendgate.service')).toContain('Type=notify');
      expect(pi.calls()).toContain('systemctl enable vendgate.service');

      // sudo vendgate-update ./vendgate_<next>_amd64.deb: verified, then dpkg's postinst switches, gated.
      const nextVersion = `${VERSION}.1`;
      const next = nextRelease(shared, nextVersion, join(dir, 'next'));
      const update = await pi.run('update.sh', [next], join(pi.root, 'usr/lib/vendgate/release'));
      expect(update.stderr).not.toMatch(/error/);
      expect(update.code, update.stdout + update.stderr).toBe(0);
      expect(update.stdout).toContain(`signature and checksum good: vendgate_${nextVersion}_amd64.deb, version ${nextVersion}`);
      expect(update.stdout).toMatch(/database backed up to .*backups\/vendgate\/vendgate-\d{8}T\d{6}Z\.db \(VACUUM INTO\)/);
      expect(update.stdout).toMatch(/OK: nothing failed/);
      expect(current(pi)).not.toBe(first);
      expect(update.stdout).toContain(`Updated: ${first} → ${current(pi)}`);
    },
  );

  it(
    'refuses a tampered artefact, a tampered SHA256SUMS and another key with a clear message, and changes nothing',
    { timeout: 600_000 },
    async () => {
      pi = await fakePi();
      pi.useNode(hostNode());
      pi.writeConfig();
      const good = here(pi);
      const tarball = `vendgate-${VERSION}-linux-x64.tar.gz`;
      // From a tarball: install-pi.sh --release FILE --key FILE (the repository's install-pi.sh).
      const install = await pi.run('install-pi.sh', ['--release', join(good, tarball), '--key', key.pub], REPO);
      expect(install.stderr).not.toMatch(/error/);
      expect(install.code, install.stdout + install.stderr).toBe(0);
      expect(install.stdout).toContain(`signature and checksum good: ${tarball}`);
      expect(install.stdout).toMatch(/OK: nothing failed/);
      const before = current(pi);
      const releases = () => readdirSync(join(pi!.root, 'opt/vendgate/releases')).sort();
      const installed = releases();
      const callsBefore = pi.calls().length;
      const updateScript = join(pi.root, 'opt/vendgate/current');

      // One byte of the tarball changed.
      const altered = here(pi);
      const bytes = readFileSync(join(altered, tarball));
      bytes[bytes.length - 100] = bytes[bytes.length - 100]! ^ 0xff;
      writeFileSync(join(altered, tarball), bytes);
      const tampered = await pi.run('update.sh', [join(altered, tarball)], updateScript);
      expect(tampered.code).toBe(1);
      expect(tampered.stderr).toMatch(
        new RegExp(`${escapeRe(tarball)} does not match its signed checksum .* refusing it\\. Nothing was changed`),
      );

      // SHA256SUMS rewritten to match the altered file: the signature no longer fits.
      const sums = readFileSync(join(altered, 'SHA256SUMS'), 'utf8');
      const digest = run('sha256sum', [join(altered, tarball)]).stdout.split(' ')[0]!;
      writeFileSync(join(altered, 'SHA256SUMS'), sums.replace(new RegExp(`^[0-9a-f]{64}(  ${escapeRe(tarball)})$`, 'm'), `${digest}$1`));
      const resigned = await pi.run('update.sh', [join(altered, tarball)], updateScript);
      expect(resigned.code).toBe(1);
      expect(resigned.stderr).toMatch(/SHA256SUMS is not signed by the release key .*release-key\.pub .* Nothing was changed/);

      // The genuine release checked against another key.
      const other = join(pi.root, '..', 'other');
      expect(run('minisign', ['-G', '-W', '-s', `${other}.key`, '-p', `${other}.pub`]).code).toBe(0);
      const wrongKey = await pi.run('update.sh', [join(good, tarball), '--key', `${other}.pub`], updateScript);
      expect(wrongKey.code).toBe(1);
      expect(wrongKey.stderr).toMatch(/SHA256SUMS is not signed by the release key/);

      // No signature at all.
      const unsigned = here(pi);
      spawnSync('rm', [join(unsigned, 'SHA256SUMS.minisig')]);
      const none = await pi.run('update.sh', [join(unsigned, tarball)], updateScript);
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/no SHA256SUMS\.minisig beside .* unsigned\. Nothing was changed/);

      // Nothing changed: same release, no new release directory, the service never stopped.
      expect(current(pi)).toBe(before);
      expect(releases()).toEqual(installed);
      expect(pi.calls().slice(callsBefore)).toEqual([]);
      expect(existsSync(join(pi.root, 'var/backups/vendgate'))).toBe(false);

      // And the genuine one verifies: it is the version installed, so there is nothing to do.
      const update = await pi.run('update.sh', [join(good, tarball)], updateScript);
      expect(update.code, update.stdout + update.stderr).toBe(0);
      expect(update.stdout).toContain(`vendgate ${VERSION} is already installed: nothing to do`);
      expect(current(pi)).toBe(before);
    },
  );
});
