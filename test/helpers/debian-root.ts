import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp.js';
import { testCacheRoot } from './release-build.js';

/**
 * A Debian system booted with systemd, from Debian's own packages: debootstrap makes the root (once:
 * it is cached by suite and package list, since CI must not pay for it twice), and each test boots
 * a copy of it with `systemd-nspawn --boot` on a private network (its own loopback, so the
 * service's fixed ports 8080/8787 meet nothing on this machine). Commands run inside with nsenter,
 * as root, as a technician's would over ssh. Needs root, debootstrap and systemd-container
 * (scripts/install-test-deps.sh) and Debian's mirror through apt's configured sources.
 */
export const SUITE = 'bookworm';
/** What a stock Raspberry Pi OS Lite has and the package needs (its Depends and Recommends). */
export const PACKAGES = ['systemd', 'systemd-sysv', 'dbus', 'minisign', 'gpiod'];

function mirror(): string {
  for (const file of ['/etc/apt/sources.list.d/debian.sources']) {
    if (!existsSync(file)) continue;
    const uri = /^URIs:\s*(\S+)/m.exec(readFileSync(file, 'utf8'));
    if (uri?.[1]) return uri[1];
  }
  return 'http://deb.debian.org/debian';
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The cached debootstrapped root (made on the first call; minutes), keyed by suite, packages and mirror. */
export function debianRootCache(): { path: string; made: boolean; seconds: number } {
  const source = mirror();
  const key = createHash('sha256')
    .update(`${SUITE}\0${PACKAGES.join(',')}\0${source}`)
    .digest('hex')
    .slice(0, 16);
  const path = join(testCacheRoot(), `debian-${SUITE}-${key}`);
  if (existsSync(join(path, '.vendgate-complete'))) return { path, made: false, seconds: 0 };
  const partial = `${path}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  const started = Date.now();
  const result = spawnSync('debootstrap', ['--variant=minbase', `--include=${PACKAGES.join(',')}`, SUITE, partial, source], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    rmSync(partial, { recursive: true, force: true });
    throw new Error(`debootstrap ${SUITE} failed (${result.status}): ${(result.stderr || result.stdout).slice(-3000)}`);
  }
  // No getty on the console (nothing reads it) and no apt timers waking up during a test.
  for (const unit of ['console-getty.service', 'apt-daily.timer', 'apt-daily-upgrade.timer'])
    spawnSync('systemctl', ['--root', partial, 'mask', unit], { encoding: 'utf8' });
  writeFileSync(join(partial, '.vendgate-complete'), `${SUITE} ${PACKAGES.join(',')} ${source}\n`);
  rmSync(path, { recursive: true, force: true });
  renameSync(partial, path);
  return { path, made: true, seconds: (Date.now() - started) / 1000 };
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The container's init (systemd, pid 1 inside) among nspawn's descendants. */
function findInit(nspawn: number): number | null {
  const queue = [nspawn];
  while (queue.length) {
    const pid = queue.shift()!;
    for (const child of children(pid)) {
      try {
        const status = readFileSync(`/proc/${child}/status`, 'utf8');
        const nspid = /^NSpid:\s*(.+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
        if (nspid && nspid.length > 1 && nspid.at(-1) === '1') return child;
      } catch {
        // gone
      }
      queue.push(child);
    }
  }
  return null;
}

export interface BootedDebian {
  /** The container's root directory on this machine (to copy files in). */
  root: string;
  /** A shell command inside, as root, with a login's PATH. */
  sh(command: string, timeoutMs?: number): Promise<Run>;
  /** What systemd printed on the console. */
  console(): string;
  stop(): Promise<void>;
}

export async function bootDebian(name: string): Promise<BootedDebian> {
  const cache = debianRootCache();
  const dir = tempDir(`vendgate-${name}-`);
  const root = join(dir.path, 'root');
  const copy = spawnSync('cp', ['-a', '--reflink=auto', cache.path, root], { encoding: 'utf8' });
  if (copy.status !== 0) throw new Error(`copying the Debian root failed: ${copy.stderr}`);
  mkdirSync(join(root, 'root'), { recursive: true });
  let output = '';
  const machine = `${name}-${process.pid}`.slice(0, 60);
  const nspawn: ChildProcess = spawn(
    'systemd-nspawn',
    ['--quiet', '--directory', root, '--boot', '--keep-unit', '--register=no', '--private-network', `--machine=${machine}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  nspawn.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  nspawn.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => nspawn.on('close', () => resolve()));
  let init: number | null = null;
  const deadline = Date.now() + 60_000;
  while (init === null) {
    if (nspawn.exitCode !== null) throw new Error(`systemd-nspawn exited (${nspawn.exitCode}):\n${output.slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`no init in the container after 60 s:\n${output.slice(-3000)}`);
    init = findInit(nspawn.pid!);
    if (init === null) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const pid = init;

  const sh = (command: string, timeoutMs = 300_000): Promise<Run> =>
    new Promise((resolve) => {
      const child = spawn(
        'nsenter',
        [
          '--target',
          String(pid),
          '--mount',
          '--uts',
          '--ipc',
          '--net',
          '--pid',
          '--root',
          '--wd',
          '/usr/bin/env',
          '-i',
          'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          'HOME=/root',
          'LANG=C.UTF-8',
          'TERM=dumb',
          '/bin/bash',
          '-c',
          `cd /root && ${command}`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });

  // Booted: systemd says running (or degraded: a unit this container cannot have, e.g. a device).
  // Until nspawn's child has become systemd and opened its bus, systemctl says "offline": asked again.
  let booted: Run = { code: null, stdout: '', stderr: '' };
  const bootDeadline = Date.now() + 180_000;
  while (Date.now() < bootDeadline) {
    if (nspawn.exitCode !== null) throw new Error(`systemd-nspawn exited (${nspawn.exitCode}):\n${output.slice(-3000)}`);
    let comm = '';
    try {
      comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      // not yet
    }
    if (comm === 'systemd') {
      booted = await sh('systemctl is-system-running --wait', 120_000);
      if (!/^(offline|unknown)?$/.test(booted.stdout.trim())) break;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (!/^(running|degraded)/.test(booted.stdout.trim())) {
    const failed = await sh('systemctl --failed --no-pager; journalctl -b --no-pager | tail -n 50');
    throw new Error(`the container did not boot (${booted.stdout.trim()}):\n${failed.stdout}\n${output.slice(-2000)}`);
  }

  return {
    root,
    sh,
    console: () => output,
    async stop() {
      if (nspawn.exitCode === null) {
        nspawn.kill('SIGTERM');
        const timer = setTimeout(() => nspawn.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
      dir.cleanup();
    },
  };
}
