/**
 * Real file systems for the storage tests: a small tmpfs, and ext4 on a loop device
 * mounted `errors=remount-ro`, turned read-only by the kernel's own error path. Needs root (CI runs
 * as root) and e2fsprogs + util-linux (scripts/install-test-deps.sh). Every mount point is unique,
 * under its own temp directory; `release()` unmounts, detaches and removes, and is safe to call twice.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

export interface Mounted {
  /** The mount point. */
  dir: string;
  release(): void;
}

function run(command: string, args: string[]): string {
  return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A tmpfs of `sizeMb` MiB. */
export function mountTmpfs(sizeMb: number): Mounted {
  const base = mkdtempSync(join(tmpdir(), 'vendgate-tmpfs-'));
  const dir = join(base, 'mnt');
  mkdirSync(dir);
  run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0755`, 'tmpfs', dir]);
  let released = false;
  return {
    dir,
    release() {
      if (released) return;
      released = true;
      try {
        run('umount', ['-l', dir]);
      } finally {
        rmSync(base, { recursive: true, force: true });
      }
    },
  };
}

/** ext4 on a loop device over a `sizeMb` MiB image, mounted errors=remount-ro. */
export function mountExt4(sizeMb: number): Mounted & { device: string; failFileSystem(): void } {
  const base = mkdtempSync(join(tmpdir(), 'vendgate-ext4-'));
  const image = join(base, 'card.img');
  const dir = join(base, 'mnt');
  mkdirSync(dir);
  const fd = openSync(image, 'w');
  closeSync(fd);
  run('truncate', ['-s', `${sizeMb}M`, image]);
  run('mkfs.ext4', ['-q', '-F', image]);
  const device = run('losetup', ['--find', '--show', image]);
  let mounted = false;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    try {
      if (mounted) run('umount', ['-l', dir]);
    } finally {
      try {
        run('losetup', ['-d', device]);
      } finally {
        rmSync(base, { recursive: true, force: true });
      }
    }
  };
  try {
    run('mount', ['-t', 'ext4', '-o', 'errors=remount-ro', device, dir]);
    mounted = true;
  } catch (err) {
    release();
    throw err;
  }
  return {
    dir,
    device,
    release,
    /** What a failing SD card makes ext4 do: an error in the file system, and the kernel remounts it read-only. */
    failFileSystem() {
      writeFileSync(`/sys/fs/ext4/${basename(device)}/trigger_fs_error`, 'vendgate test: simulated card failure\n');
    },
  };
}

/** Writes zeros into `path` until the file system says ENOSPC. Returns the bytes written. */
export function fillUp(path: string): number {
  const fd = openSync(path, 'w');
  let written = 0;
  try {
    for (const size of [1024 * 1024, 64 * 1024, 4096, 512]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          written += writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}
