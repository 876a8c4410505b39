/**
 * A file system that loses exactly the writes not yet synced, as an SD card does on power loss:
 * test/techniques/power-cut/power-cut-fs.c (our own FUSE passthrough, built by test/techniques/power-cut/build.sh against
 * libfuse3) keeps every write since a file's last fsync/fdatasync in its memory. `cut()` is the
 * power cut: the daemon is killed with SIGKILL and its mount dropped, so everything unsynced is
 * gone, and a fresh daemon mounts the same backing directory, which holds only what was synced.
 * Kill the processes using the mount first (a power cut stops them too). Needs root, /dev/fuse,
 * fuse3 and libfuse3-dev (scripts/install-test-deps.sh).
 *
 *   const fs = await mountPowerCutFs();   // fs.path: the mount point
 *   ... await svc.kill('SIGKILL'); await fs.cut(); await svc.restart();
 *   await fs.unmount();                   // also removes both directories
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from './wait.js';

const SOURCE_DIR = new URL('../techniques/power-cut/', import.meta.url).pathname;

/** Builds the daemon once per source version (the build script skips an up-to-date binary). */
function binary(): string {
  const hash = createHash('sha256')
    .update(readFileSync(join(SOURCE_DIR, 'power-cut-fs.c')))
    .digest('hex')
    .slice(0, 12);
  const out = join(tmpdir(), `vendgate-power-cut-fs-${hash}`);
  const built = spawnSync('sh', [join(SOURCE_DIR, 'build.sh'), out], { encoding: 'utf8' });
  if (built.status !== 0)
    throw new Error(`building power-cut-fs failed (scripts/install-test-deps.sh installs libfuse3-dev):\n${built.stderr}`);
  return built.stdout.trim();
}

function mounted(path: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[4] === path && line.includes(' - fuse.power-cut-fs '));
}

export interface PowerCutFs {
  /** The mount point: put the database here. */
  readonly path: string;
  /** The card itself: what a cut keeps. */
  readonly backing: string;
  /** The power cut: every write not yet fsynced is lost; then the card is mounted again. */
  cut(): Promise<void>;
  /** Unmounts and removes both directories. Safe twice. */
  unmount(): Promise<void>;
}

const live = new Set<{ daemon: ChildProcess | null; path: string }>();
process.once('exit', () => {
  for (const m of live) {
    m.daemon?.kill('SIGKILL');
    spawnSync('umount', ['-l', m.path]);
  }
});

export async function mountPowerCutFs(): Promise<PowerCutFs> {
  const bin = binary();
  const backing = mkdtempSync(join(tmpdir(), 'vendgate-card-'));
  const path = mkdtempSync(join(tmpdir(), 'vendgate-mnt-'));
  const state: { daemon: ChildProcess | null; path: string } = { daemon: null, path };
  live.add(state);
  let stderr = '';

  async function mount(): Promise<void> {
    const daemon = spawn(bin, [backing, path, '-f', '-s'], { stdio: ['ignore', 'ignore', 'pipe'] });
    daemon.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    state.daemon = daemon;
    let exited = false;
    daemon.once('exit', () => (exited = true));
    await waitFor(
      () => {
        if (exited) throw new Error(`power-cut-fs exited before mounting: ${stderr}`);
        return mounted(path);
      },
      { what: `power-cut-fs mounted at ${path}` },
    );
  }

  async function kill(): Promise<void> {
    const daemon = state.daemon;
    state.daemon = null;
    if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
      const gone = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGKILL');
      await gone;
    }
    spawnSync('umount', ['-l', path]);
    await waitFor(() => !mounted(path), { what: `${path} unmounted` });
  }

  await mount();
  let removed = false;
  return {
    path,
    backing,
    async cut() {
      await kill();
      await mount();
    },
    async unmount() {
      if (removed) return;
      removed = true;
      await kill();
      live.delete(state);
      rmSync(path, { recursive: true, force: true });
      rmSync(backing, { recursive: true, force: true });
    },
  };
}
