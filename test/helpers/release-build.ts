import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

/**
 * One `npm run release` (both architectures, signed with a test key) per source tree, shared by
 * every test that needs the artefacts: the e2e release test, the booted-Debian package test and the
 * update tests. The build is kept in a cache directory named by a hash of everything that goes into
 * it (dist/'s source stamp, the release scripts, the Node pin, config/, systemd/, docs/, the lockfile),
 * so a second test file, and a second run of the suite on the same tree, reuse it instead of paying
 * minutes of compiling again. A lock directory makes concurrent callers wait for one build.
 *
 * The cache lives in $VENDGATE_TEST_CACHE, else /var/cache/vendgate-test (root, as the e2e suite
 * runs), else the temp directory. Only the newest few builds are kept. To iterate on a test against
 * a build of another tree: VENDGATE_TEST_RELEASE_DIR=<a cache entry, release-<hash>/>.
 */
const REPO = new URL('../../', import.meta.url).pathname;

export interface SharedRelease {
  /** The --out of release.sh: the .debs, tarballs, SHA256SUMS, its signature and release-key.pub. */
  dir: string;
  /** The version release.sh gave this build (from the artefacts' names). */
  version: string;
  /** The test key it was signed with (no password). */
  key: { secret: string; pub: string };
  /** release.sh's output, and how long the build took when it ran (0 when it came from the cache). */
  output: string;
  seconds: number;
  fromCache: boolean;
}

export function testCacheRoot(): string {
  const candidates = [process.env.VENDGATE_TEST_CACHE, '/var/cache/vendgate-test', join(tmpdir(), 'vendgate-test-cache')];
  for (const dir of candidates) {
    if (!dir) continue;
    try {
      mkdirSync(dir, { recursive: true });
      accessSync(dir, constants.W_OK);
      return dir;
    } catch {
      // next candidate
    }
  }
  throw new Error('no writable cache directory for the release build');
}

function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : [path];
    });
}

/** What the release is made of; a change in any of it is another build. */
export function releaseInputHash(): string {
  const hash = createHash('sha256');
  const stamp = join(REPO, 'dist', '.source-hash');
  hash.update(existsSync(stamp) ? readFileSync(stamp) : 'no-stamp');
  const inputs = [
    ...['release.sh', 'release-sign.sh', 'release-prune.mjs', 'install-pi.sh', 'update.sh', 'package-postinst.sh', 'node-runtime.lock'].map(
      (name) => join(REPO, 'scripts', name),
    ),
    ...files(join(REPO, 'scripts', 'package-maint')),
    join(REPO, 'package.json'),
    join(REPO, 'package-lock.json'),
    ...files(join(REPO, 'config')),
    ...files(join(REPO, 'systemd')),
    ...files(join(REPO, 'docs')),
  ];
  for (const path of inputs) hash.update(relative(REPO, path)).update('\0').update(readFileSync(path)).update('\0');
  return hash.digest('hex').slice(0, 20);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function build(partial: string, nodeCache: string): Promise<{ code: number | null; output: string; seconds: number }> {
  rmSync(partial, { recursive: true, force: true });
  const out = join(partial, 'release');
  mkdirSync(join(out, '.work'), { recursive: true });
  writeFileSync(join(out, '.work', '.release-sh'), '');
  // The pinned Node tarballs of an earlier build (release.sh checks them against the pin again).
  if (existsSync(nodeCache))
    for (const name of readdirSync(nodeCache).filter((n) => n.endsWith('.tgz'))) cpSync(join(nodeCache, name), join(out, '.work', name));
  const key = { secret: join(partial, 'test.key'), pub: join(partial, 'test.pub') };
  const keygen = spawnSync('minisign', ['-G', '-W', '-s', key.secret, '-p', key.pub], { encoding: 'utf8' });
  if (keygen.status !== 0) throw new Error(`minisign is missing (scripts/install-test-deps.sh): ${keygen.stderr}`);
  const started = Date.now();
  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    // --fast-compression: the same formats (xz in the .deb, gzip in the tarball) at their fastest
    // level. No test looks at the level; at xz's default the two .debs alone took minutes of CPU
    // here (the Node runtime is 119 MiB per architecture).
    const script = [join(REPO, 'scripts/release.sh'), '--skip-build', '--fast-compression', '--key', key.secret, '--out', out];
    const child = spawn('bash', ['-c', 'TIMEFORMAT="release.sh: %R s wall, %U s user, %S s sys"; time bash "$@"', 'release', ...script], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
  mkdirSync(nodeCache, { recursive: true });
  for (const name of readdirSync(join(out, '.work')).filter((n) => n.endsWith('.tgz')))
    cpSync(join(out, '.work', name), join(nodeCache, name));
  return { ...result, seconds: (Date.now() - started) / 1000 };
}

/** The shared release of the tree of now: built on the first call, then read from the cache. */
export async function sharedRelease(): Promise<SharedRelease> {
  const root = testCacheRoot();
  const hash = releaseInputHash();
  const done = process.env.VENDGATE_TEST_RELEASE_DIR ?? join(root, `release-${hash}`);
  const lock = join(root, `release-${hash}.lock`);
  const read = (fromCache: boolean): SharedRelease => {
    const info = JSON.parse(readFileSync(join(done, 'build.json'), 'utf8')) as { version: string; output: string; seconds: number };
    return {
      dir: join(done, 'release'),
      version: info.version,
      key: { secret: join(done, 'test.key'), pub: join(done, 'test.pub') },
      output: info.output,
      seconds: fromCache ? 0 : info.seconds,
      fromCache,
    };
  };
  for (;;) {
    if (existsSync(join(done, 'build.json'))) return read(true);
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      const holder = Number.parseInt(readFileSync(join(lock, 'pid'), 'utf8').trim() || '0', 10);
      if (holder && !alive(holder)) rmSync(lock, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  try {
    if (existsSync(join(done, 'build.json'))) return read(true);
    const partial = `${done}.partial`;
    const result = await build(partial, join(root, 'node-runtime'));
    if (result.code !== 0) throw new Error(`release.sh failed (${result.code}):\n${result.output.slice(-6000)}`);
    const deb = readdirSync(join(partial, 'release')).find((name) => /^vendgate_.+_amd64\.deb$/.test(name));
    if (!deb) throw new Error(`release.sh made no amd64 .deb:\n${result.output.slice(-3000)}`);
    const version = deb.replace(/^vendgate_/, '').replace(/_amd64\.deb$/, '');
    writeFileSync(join(partial, 'build.json'), JSON.stringify({ version, output: result.output, seconds: result.seconds }));
    rmSync(done, { recursive: true, force: true });
    renameSync(partial, done);
    // Older builds of other trees: keep the newest three.
    const others = readdirSync(root)
      .filter((name) => /^release-[0-9a-f]{20}$/.test(name) && name !== `release-${hash}`)
      .map((name) => ({ name, time: statSync(join(root, name)).mtimeMs }))
      .sort((a, b) => b.time - a.time);
    for (const old of others.slice(2)) rmSync(join(root, old.name), { recursive: true, force: true });
    return read(false);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * A newer release of the same build, made as a maintainer would make the next one: the amd64 .deb
 * with `version` in its control file, RELEASE and package.json, packed by dpkg-deb and signed by
 * scripts/release-sign.sh with the same key, alone in `out` with its SHA256SUMS and signature.
 * (Cheap: no second compile. gzip -1, since only the test unpacks it.)
 */
export function nextRelease(release: SharedRelease, version: string, out: string): string {
  const work = join(out, '.pkg');
  const deb = join(release.dir, `vendgate_${release.version}_amd64.deb`);
  const run = (command: string, args: string[]) => {
    const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.stderr}`);
  };
  mkdirSync(out, { recursive: true });
  run('dpkg-deb', ['-R', deb, work]);
  const edit = (path: string, from: RegExp, to: string) => writeFileSync(path, readFileSync(path, 'utf8').replace(from, to));
  edit(join(work, 'DEBIAN/control'), /^Version: .*$/m, `Version: ${version}`);
  edit(join(work, 'usr/lib/vendgate/release/RELEASE'), /^version=.*$/m, `version=${version}`);
  edit(join(work, 'usr/lib/vendgate/release/package.json'), /^  "version": ".*",$/m, `  "version": "${version}",`);
  const next = join(out, `vendgate_${version}_amd64.deb`);
  run('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z1', '--build', work, next]);
  rmSync(work, { recursive: true, force: true });
  run('bash', [join(REPO, 'scripts/release-sign.sh'), '--key', release.key.secret, out]);
  return next;
}
