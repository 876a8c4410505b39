import { dirname, resolve } from 'node:path';
import { classifyStorageError, freeBytesAt } from '../store/index.js';
import type { StartProblem } from './start-errors.js';

/** SQLite's words for a file that is not a sound database. */
const DAMAGED = /^SQLITE_(CORRUPT|NOTADB)/;

/**
 * A start that failed on the storage beneath the database: the file, the cause and the next step in
 * one sentence each, for one fatal line and exit 74 (EX_IOERR), which systemd does not restart on
 * (RestartPreventExitStatus): a damaged file, a full disk or a failing card does not heal by itself
 * every 5 s, and nothing is written to a damaged file meanwhile. Null for any other failure.
 */
export function describeStorageStartError(err: unknown, databasePath: string): StartProblem | null {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return null;
  const path = resolve(databasePath);
  const file = (err as { path?: unknown }).path;
  const where = typeof file === 'string' && resolve(file) !== path ? ` (${code} on ${file})` : ` (${code})`;
  const cause = err instanceof Error ? err.message : code;
  if (DAMAGED.test(code)) {
    return {
      code,
      path,
      message: `the database ${path} is damaged: ${cause}; nothing was written to it`,
      hint: `run \`vendgate doctor\` for what is damaged; then \`vendgate db restore BACKUP --yes\` (the last backup) or \`vendgate db replace --yes\` (an empty database): each keeps the damaged file and records what it did, and the next start raises database_restored or database_replaced and parks the provider's sales it lacks for a person (never move the files aside by hand)`,
    };
  }
  const dir = dirname(path);
  const storage = classifyStorageError(err, dir);
  if (!storage) return null;
  const free = freeBytesAt(dir);
  const freeText = free === null ? 'free space unknown' : `${free} bytes free`;
  switch (storage.kind) {
    case 'full':
      return {
        code,
        path,
        freeBytes: free,
        message: `the disk holding ${path} is full${where}, ${freeText}`,
        hint: 'free space on it (sudo journalctl --vacuum-size=50M; old files under /var/log and /tmp), then sudo systemctl restart vendgate',
      };
    case 'readonly':
      return {
        code,
        path,
        freeBytes: free,
        message: `the card holding ${path} is read-only${where}: the kernel turns a failing SD card read-only`,
        hint: 'run `vendgate doctor`, copy the database off the card, replace the SD card and restore the database onto the new one',
      };
    case 'io_error':
      return {
        code,
        path,
        freeBytes: free,
        message: `the card holding ${path} reports I/O errors${where}: ${cause}`,
        hint: 'run `vendgate doctor` and check dmesg for mmc errors; replace the SD card and restore the database',
      };
  }
}
