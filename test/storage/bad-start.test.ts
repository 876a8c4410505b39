import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startService } from '../helpers/service.js';
import { runMain } from '../helpers/process.js';

/**
 * A start on a damaged database: one fatal line naming the file, the cause and the next
 * step, exit 74 (systemd/vendgate.service does not restart on it), and the file untouched.
 */
const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('a start on a damaged database', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A database the service made and used (an order, its invoice), then stopped cleanly. */
  async function usedDatabase(): Promise<{ dir: string; dbPath: string; configPath: string }> {
    const dir = mkdtempSync(join(tmpdir(), 'vendgate-damaged-'));
    dirs.push(dir);
    const svc = await startService({ dir });
    const created = await fetch(`${svc.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: 'A1' }),
    });
    expect(created.status).toBe(201);
    await svc.stop();
    expect(existsSync(`${svc.dbPath}-wal`) ? readFileSync(`${svc.dbPath}-wal`).length : 0).toBe(0);
    return { dir, dbPath: svc.dbPath, configPath: svc.configPath };
  }

  function expectOneFatalLine(result: { code: number | null; stderr: string }, dbPath: string, cause: RegExp) {
    expect(result.code).toBe(74);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(dbPath);
    expect(lines[0]).toMatch(cause);
    expect(lines[0]).toMatch(/Next: .*vendgate doctor/);
  }

  it('damaged pages: refuses with the file, SQLITE_CORRUPT and the next step, exit 74, the file unchanged', async () => {
    const { dbPath, configPath } = await usedDatabase();
    const probe = new Database(dbPath, { readonly: true });
    const pageSize = probe.pragma('page_size', { simple: true }) as number;
    const { rootpage } = probe.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'meta'").get() as { rootpage: number };
    probe.close();
    // The page of the meta table (read at every start) overwritten with garbage, as a failing card does.
    const bytes = readFileSync(dbPath);
    for (let i = 0; i < pageSize; i += 1) bytes[(rootpage - 1) * pageSize + i] = (i * 131 + 7) & 0xff;
    writeFileSync(dbPath, bytes);
    const before = sha(dbPath);

    const result = await runMain(['start', '--config', configPath]);
    expectOneFatalLine(result, dbPath, /damaged: .*malformed/);
    expect(sha(dbPath)).toBe(before);
  });

  it('a truncated file: the same refusal, the file unchanged', async () => {
    const { dbPath, configPath } = await usedDatabase();
    truncateSync(dbPath, Math.floor(readFileSync(dbPath).length / 3));
    const before = sha(dbPath);

    const result = await runMain(['start', '--config', configPath]);
    expectOneFatalLine(result, dbPath, /damaged/);
    expect(sha(dbPath)).toBe(before);
  });

  it('a file that is not a database: the same refusal, the file unchanged', async () => {
    const { dbPath, configPath } = await usedDatabase();
    writeFileSync(dbPath, Buffer.alloc(64 * 1024, 0x5a));
    const before = sha(dbPath);

    const result = await runMain(['start', '--config', configPath]);
    expectOneFatalLine(result, dbPath, /damaged: .*not a database/);
    expect(sha(dbPath)).toBe(before);
  });
});
