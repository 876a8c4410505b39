import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

/**
 * The file system and the card beneath a path, as the kernel tells it: the mount (device, type,
 * whether ext4 has gone read-only after an error) from /proc/self/mountinfo, and the ext4
 * counters under /sys/fs/ext4/<device>/ (lifetime writes, errors since mkfs). Read only.
 */
export interface CardInfo {
  mountPoint: string;
  device: string;
  fsType: string;
  /** The mount or its superblock says read-only (`ro`, or ext4's `emergency_ro` after an error). */
  readOnly: boolean;
  /** ext4 only: kilobytes written to the file system since it was made (the card's wear). */
  lifetimeWriteKbytes: number | null;
  /** ext4 only: errors the file system recorded (a failing card). */
  errorsCount: number | null;
  /** ext4 only: when the first recorded error happened (ISO), or null. */
  firstErrorAt: string | null;
}

/** Mountinfo escapes spaces and the like as \ooo. */
const unescape = (field: string) => field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));

function readNumber(path: string): number | null {
  try {
    const value = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

/** The mount holding `path` (the longest mount point that contains it), or null where /proc is not readable. */
export function cardInfo(path: string, mountinfo = '/proc/self/mountinfo', sysExt4 = '/sys/fs/ext4'): CardInfo | null {
  let text: string;
  try {
    text = readFileSync(mountinfo, 'utf8');
  } catch {
    return null;
  }
  const target = resolve(path);
  let best: { mountPoint: string; device: string; fsType: string; options: string[] } | null = null;
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const mountPoint = unescape(fields[4] ?? '');
    const mountOptions = (fields[5] ?? '').split(',');
    const [fsType = '', source = '', superOptions = ''] = right.split(' ');
    const inside = target === mountPoint || target.startsWith(mountPoint.endsWith('/') ? mountPoint : `${mountPoint}/`);
    if (!inside || (best && best.mountPoint.length > mountPoint.length)) continue;
    best = { mountPoint, device: unescape(source), fsType, options: [...mountOptions, ...superOptions.split(',')] };
  }
  if (!best) return null;
  const readOnly = best.options.includes('ro') || best.options.includes('emergency_ro');
  const ext4 = best.fsType === 'ext4' ? `${sysExt4}/${basename(best.device)}` : null;
  const firstError = ext4 ? readNumber(`${ext4}/first_error_time`) : null;
  return {
    mountPoint: best.mountPoint,
    device: best.device,
    fsType: best.fsType,
    readOnly,
    lifetimeWriteKbytes: ext4 ? readNumber(`${ext4}/lifetime_write_kbytes`) : null,
    errorsCount: ext4 ? readNumber(`${ext4}/errors_count`) : null,
    firstErrorAt: firstError ? new Date(firstError * 1000).toISOString() : null,
  };
}

/** The directory whose mount holds a database file. */
export const databaseDir = (databasePath: string) => dirname(resolve(databasePath));
