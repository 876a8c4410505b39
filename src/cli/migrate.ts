import { loadSettings } from '../settings/index.js';
import { openDatabase, listMigrations, acquireInstanceLock } from '../store/index.js';
import { type CliIo, EXIT, print } from './io.js';

/** `vendgate migrate [--config FILE]`: applies pending migrations (update.sh runs it before starting). */
export function migrateCommand(options: { config?: string }, io: CliIo): number {
  const { settings } = loadSettings({ path: options.config, env: io.env });
  // Never under a running service: the same lock as `start` (InstanceLockedError → exit 75).
  const lock = acquireInstanceLock(settings.storage.path);
  let db;
  try {
    db = openDatabase(settings.storage.path);
  } catch (err) {
    lock.release();
    throw err;
  }
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    const latest = listMigrations().at(-1)?.version ?? 0;
    print(io.stdout, `schema version ${version} (latest ${latest}) at ${settings.storage.path}`);
    return version === latest ? EXIT.OK : EXIT.FAILURE;
  } finally {
    db.close();
    lock.release();
  }
}
