import { copyFileSync, openSync, readSync, closeSync, statSync } from 'node:fs';

/**
 * The write-ahead log beside the database, looked at before SQLite opens it. SQLite silently
 * discards a WAL whose header is not sound (a card that corrupted it, a garbage file): every commit
 * since the last checkpoint is gone, including vends settled meanwhile. That is the hazard of a
 * database restored from a backup, and it is handled the same way (src/store/lineage.ts).
 */
export interface WalFinding {
  path: string;
  bytes: number;
  /** Why SQLite will discard it, or null when it is absent, empty or sound. */
  discarded: string | null;
}

const MAGIC_LE = 0x377f0682;
const MAGIC_BE = 0x377f0683;
const HEADER_BYTES = 32;

export const walPathFor = (databasePath: string) => `${databasePath}-wal`;

/** SQLite's WAL checksum over `data` (pairs of 32-bit words, in the byte order the magic names). */
function walChecksum(data: Buffer, bigEndian: boolean): [number, number] {
  let s0 = 0;
  let s1 = 0;
  for (let i = 0; i + 8 <= data.length; i += 8) {
    const x0 = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const x1 = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

/** Reads the WAL's header (nothing is written). */
export function inspectWal(databasePath: string): WalFinding {
  const path = walPathFor(databasePath);
  let bytes: number;
  try {
    bytes = statSync(path).size;
  } catch {
    return { path, bytes: 0, discarded: null };
  }
  if (bytes === 0) return { path, bytes, discarded: null };
  if (bytes < HEADER_BYTES) return { path, bytes, discarded: `${bytes} bytes, shorter than a WAL header` };
  const header = Buffer.alloc(HEADER_BYTES);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, header, 0, HEADER_BYTES, 0);
  } finally {
    closeSync(fd);
  }
  const magic = header.readUInt32BE(0);
  if (magic !== MAGIC_LE && magic !== MAGIC_BE) return { path, bytes, discarded: `no WAL magic number (0x${magic.toString(16)})` };
  const version = header.readUInt32BE(4);
  if (version !== 3007000) return { path, bytes, discarded: `WAL format ${version}, not 3007000` };
  const [c0, c1] = walChecksum(header.subarray(0, 24), magic === MAGIC_BE);
  if (c0 !== header.readUInt32BE(24) || c1 !== header.readUInt32BE(28))
    return { path, bytes, discarded: 'the WAL header checksum does not hold' };
  return { path, bytes, discarded: null };
}

/** Keeps a copy of a WAL SQLite is about to discard, for whoever looks into it. Returns its path, or null. */
export function keepDiscardedWal(finding: WalFinding, now: number): string | null {
  const copy = `${finding.path}.discarded-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
  try {
    copyFileSync(finding.path, copy);
    return copy;
  } catch {
    return null;
  }
}
