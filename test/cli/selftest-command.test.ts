import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/index.js';
import { deviceConfig } from '../selftest/harness.js';
import { pipe, run, terminal } from './cli-io.js';

const CHECK_KEYS = ['name', 'status', 'detail', 'hint'];

function parseReport(stdout: string) {
  return JSON.parse(stdout) as {
    version: number;
    ok: boolean;
    startedAt: string;
    durationMs: number;
    config: Record<string, unknown>;
    checks: Record<string, unknown>[];
  };
}

describe('vendgate selftest (command line)', () => {
  it('--json prints one document with the stable version 1 schema', async () => {
    const device = await deviceConfig();
    openDatabase(device.dbPath).close();

    const { code, stdout } = await run(['selftest', '--json', '--config', device.path]);
    const report = parseReport(stdout);

    expect(code).toBe(0);
    expect(Object.keys(report)).toEqual(['version', 'ok', 'startedAt', 'durationMs', 'config', 'checks']);
    expect(report.version).toBe(1);
    expect(report.ok).toBe(true);
    expect(new Date(report.startedAt).toISOString()).toBe(report.startedAt);
    expect(report.durationMs).toBeGreaterThanOrEqual(0);
    expect(report.config).toEqual({ source: device.path, environment: [], deviceId: expect.stringMatching(/^st-/) });
    expect(report.checks.length).toBeGreaterThan(5);
    for (const check of report.checks) {
      expect(Object.keys(check)).toEqual(CHECK_KEYS);
      expect(['PASS', 'WARN', 'FAIL']).toContain(check.status);
      expect(typeof check.detail).toBe('string');
      expect(typeof check.hint).toBe('string');
      expect(String(check.detail)).not.toContain('\n');
      if (check.status !== 'PASS') expect(check.hint).not.toBe('');
    }
    expect(report.checks.map((c) => c.name)).toEqual(
      expect.arrayContaining(['settings', 'database', 'provider', 'webhook.listener', 'local.listener', 'mqtt']),
    );
  });

  it('exits 1 when any check FAILs, and the table shows the FAIL line with its hint', async () => {
    const device = await deviceConfig();
    writeFileSync(device.dbPath, 'garbage'.repeat(1000));

    const table = await run(['selftest', '--config', device.path]);
    const json = await run(['selftest', '--json', '--config', device.path]);

    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(/^FAIL +database +.*not a database$/m);
    expect(table.stdout).toMatch(/^ +→ the file is damaged/m);
    expect(table.stdout).toMatch(/NOT OK: fix the FAIL lines/);
    expect(json.code).toBe(1);
    expect(parseReport(json.stdout).ok).toBe(false);
  });

  it('bad settings: exit 78, one FAIL line naming every problem, in the table and in --json', async () => {
    const device = await deviceConfig({ device: { id: 'Bad Id' }, actuator: { kind: 'relay' } });

    const table = await run(['selftest', '--config', device.path]);
    const json = await run(['selftest', '--json', '--config', device.path]);

    expect(table.code).toBe(78);
    expect(table.stdout).toMatch(/^FAIL +settings +.*device\.id: .*actuator\.relay\.pin: /m);
    expect(json.code).toBe(78);
    const report = parseReport(json.stdout);
    expect(report.checks).toHaveLength(1);
    expect(report.config).toEqual({ source: device.path, environment: [], deviceId: null });
  });

  it('names the environment variables that were used, never their values', async () => {
    const device = await deviceConfig();
    const { stdout } = await run(['selftest', '--json', '--config', device.path], {
      env: { VENDGATE_WEBHOOK_SECRETS: 'whsec_do_not_print' },
    });

    expect(parseReport(stdout).config.environment).toEqual(['VENDGATE_WEBHOOK_SECRETS']);
    expect(stdout).not.toContain('whsec_do_not_print');
  });

  it('with --record, stores the last result in the database even though the service is stopped', async () => {
    const device = await deviceConfig();
    openDatabase(device.dbPath).close();

    const { stdout } = await run(['selftest', '--json', '--record', '--config', device.path]);

    const db = openDatabase(device.dbPath, { readonly: true });
    try {
      const row = db.prepare("SELECT value FROM meta WHERE key = 'selftest_last'").get() as { value: string };
      expect(JSON.parse(row.value).startedAt).toBe(parseReport(stdout).startedAt);
    } finally {
      db.close();
    }
  });
});

describe('vendgate selftest --actuate', () => {
  it('refuses when stdin is not a terminal and --yes is missing: exit 64, nothing moved', async () => {
    const device = await deviceConfig();

    const { code, stdout, stderr } = await run(['selftest', '--actuate', '--config', device.path], { stdin: pipe() });

    expect(code).toBe(64);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/stdin is not a terminal.*--yes/);
    expect(existsSync(device.simLog)).toBe(false);
  });

  it('asks on a terminal and moves only after "yes"', async () => {
    const device = await deviceConfig();

    const declined = await run(['selftest', '--actuate', '--config', device.path], { stdin: terminal('no') });
    expect(declined.stderr).toMatch(/--actuate will send one simulated vend.*Type yes to go ahead/s);
    expect(declined.stdout).toMatch(/--actuate not confirmed: nothing was moved/);
    expect(existsSync(device.simLog)).toBe(false);

    const closed = await run(['selftest', '--actuate', '--config', device.path], { stdin: terminal(null) });
    expect(closed.stdout).toMatch(/not confirmed/);
    expect(existsSync(device.simLog)).toBe(false);

    const confirmed = await run(['selftest', '--actuate', '--config', device.path], { stdin: terminal('yes') });
    expect(confirmed.code).toBe(0);
    expect(confirmed.stdout).toMatch(/^PASS +actuate +test vend delivered/m);
    expect(readFileSync(device.simLog, 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('--yes confirms for a script; --yes alone never actuates', async () => {
    const device = await deviceConfig();

    const alone = await run(['selftest', '--yes', '--config', device.path], { stdin: pipe() });
    expect(alone.code).toBe(0);
    expect(existsSync(device.simLog)).toBe(false);

    const scripted = await run(['selftest', '--actuate', '--yes', '--json', '--config', device.path], { stdin: pipe() });
    expect(scripted.code).toBe(0);
    expect(parseReport(scripted.stdout).checks).toContainEqual(expect.objectContaining({ name: 'actuate', status: 'PASS' }));
    expect(readFileSync(join(device.dir, 'actuations.jsonl'), 'utf8').trim().split('\n')).toHaveLength(1);
  });
});
