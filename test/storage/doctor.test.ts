import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/index.js';
import { deviceConfig } from '../selftest/harness.js';
import { run } from '../cli/cli-io.js';
import { mountExt4, type Mounted } from '../helpers/mounts.js';

/**
 * `vendgate doctor` on real files and a real card (ext4 on a loop device): what is wrong,
 * and what to do, without ever writing to the database.
 */
interface Report {
  ok: boolean;
  checks: { name: string; status: 'PASS' | 'WARN' | 'FAIL'; detail: string; hint?: string }[];
}
const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

async function doctor(configPath: string): Promise<{ code: number; report: Report; text: string }> {
  const json = await run(['doctor', '--config', configPath, '--json']);
  const text = await run(['doctor', '--config', configPath]);
  expect(text.code).toBe(json.code);
  return { code: json.code, report: JSON.parse(json.stdout) as Report, text: text.stdout };
}
const check = (report: Report, name: string) => report.checks.find((c) => c.name === name)!;

/** A database as the service leaves it after a clean stop, with a few rows. */
function usedDatabase(dbPath: string): void {
  const db = openDatabase(dbPath);
  for (let i = 0; i < 50; i += 1) db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run(`filler_${i}`, 'x'.repeat(400));
  db.close();
}

describe('vendgate doctor', () => {
  const mounts: Mounted[] = [];
  afterEach(() => {
    for (const mounted of mounts.splice(0)) mounted.release();
  });

  it('a sound database: every line PASS or WARN, exit 0', async () => {
    const device = await deviceConfig();
    usedDatabase(device.dbPath);
    const { code, report, text } = await doctor(device.path);
    expect(code).toBe(0);
    expect(check(report, 'database')).toMatchObject({ status: 'PASS', detail: expect.stringContaining('integrity_check ok') });
    expect(check(report, 'wal').status).toBe('PASS');
    expect(check(report, 'free space').detail).toMatch(/\d+ bytes .* free in /);
    expect(check(report, 'card').status).toBe('PASS');
    expect(text).toContain('OK: nothing failed');
  });

  it('damaged pages: FAIL with what to do, exit 1, the file untouched', async () => {
    const device = await deviceConfig();
    usedDatabase(device.dbPath);
    const probe = new Database(device.dbPath, { readonly: true });
    const pageSize = probe.pragma('page_size', { simple: true }) as number;
    const { rootpage } = probe.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'meta'").get() as { rootpage: number };
    probe.close();
    const bytes = readFileSync(device.dbPath);
    for (let i = 100; i < pageSize; i += 1) bytes[(rootpage - 1) * pageSize + i] = (i * 31) & 0xff;
    writeFileSync(device.dbPath, bytes);
    const before = sha(device.dbPath);

    const { code, report, text } = await doctor(device.path);
    expect(code).toBe(1);
    expect(check(report, 'database')).toMatchObject({ status: 'FAIL', hint: expect.stringContaining('vendgate db restore') });
    expect(text).toContain('NOT OK');
    expect(sha(device.dbPath)).toBe(before);
  });

  it('a garbage WAL: FAIL naming it and what the next start does, the WAL untouched', async () => {
    const device = await deviceConfig();
    usedDatabase(device.dbPath);
    const wal = `${device.dbPath}-wal`;
    writeFileSync(wal, Buffer.alloc(8192, 0x41));
    const before = sha(wal);

    const { code, report } = await doctor(device.path);
    expect(code).toBe(1);
    expect(check(report, 'wal')).toMatchObject({ status: 'FAIL', detail: expect.stringContaining(wal) });
    expect(check(report, 'wal').hint).toContain('restored');
    expect(sha(wal)).toBe(before);
  });

  it('on ext4: the lifetime writes of the card; after the kernel turns it read-only, FAIL card and card errors', async () => {
    const card = mountExt4(32);
    mounts.push(card);
    const device = await deviceConfig();
    const dbPath = join(card.dir, 'vendgate.db');
    usedDatabase(dbPath);
    const config = join(device.dir, 'on-card.yaml');
    writeFileSync(
      config,
      stringify({ storage: { path: dbPath }, device: { id: 'doctor-card', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] } }),
    );

    const healthy = await doctor(config);
    expect(healthy.code).toBe(0);
    expect(check(healthy.report, 'card writes').detail).toMatch(new RegExp(`^\\d+ kB .* written to ${card.device}`));
    expect(Number(/^(\d+) kB/.exec(check(healthy.report, 'card writes').detail)![1])).toBeGreaterThan(0);
    // The text output a person reads says what to compare the figure with, though the line is a PASS.
    expect(healthy.text).toMatch(/PASS +card writes +\d+ kB .*\n +→ compare with the card's rated endurance \(its TBW\)/);

    card.failFileSystem();
    const failed = await doctor(config);
    expect(failed.code).toBe(1);
    expect(check(failed.report, 'card')).toMatchObject({ status: 'FAIL', detail: expect.stringContaining('read-only') });
    expect(check(failed.report, 'card errors')).toMatchObject({ status: 'FAIL', hint: expect.stringContaining('replace the SD card') });
  });
});
