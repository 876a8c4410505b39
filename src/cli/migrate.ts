import { loadSettings } from '../settings/index.js';
import { openDatabase, listMigrations } from '../store/index.js';
import { type CliIo, EXIT, print } from './io.js';

/** `vendgate migrate [--config FILE]`: applies pending migrations (update.sh runs it before starting). */
export function migrateCommand(options: { config?: string }, io: CliIo): number {
  const { settings } = loadSettings({ path: options.config, env: io.env });
  const db = openDatabase(settings.storage.path);
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    const latest = listMigrations().at(-1)?.version ?? 0;
    print(io.stdout, `schema version ${version} (latest ${latest}) at ${settings.storage.path}`);
    return version === latest ? EXIT.OK : EXIT.FAILURE;
  } finally {
    db.close();
  }
}
