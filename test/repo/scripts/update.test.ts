import { cpSync, readdirSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { current, fakePiEachTest } from './fake-system.js';

const pis = fakePiEachTest();

const REPO = new URL('../../../', import.meta.url).pathname;

// What goes wrong during an update (a release that does not start or migrate, a vend in flight):
// update-faults.test.ts.
describe('scripts/update.sh', () => {
  it('switches to the new release, backs up and migrates the database, and keeps the previous release', async () => {
    const pi = await pis.installed();
    const before = current(pi);

    const update = await pi.run('update.sh', [pi.source('1.1.0')], pi.source('1.1.0'));

    expect(update.stderr).not.toMatch(/error/);
    expect(update.code).toBe(0);
    expect(current(pi)).toMatch(/^1\.1\.0-/);
    expect(update.stdout).toContain(`Updated: ${before} → ${current(pi)}`);
    expect(update.stdout).toMatch(/database backed up to .*backups\/vendgate\/vendgate-\d{8}T\d{6}Z\.db/);
    expect(update.stdout).toMatch(/schema version \d+/);
    expect(update.stdout).toMatch(/OK: nothing failed/);
    expect(pi.exists(`opt/vendgate/releases/${before}`)).toBe(true);
    // Stopped before the switch, started after it.
    const calls = pi.calls();
    expect(calls.lastIndexOf('systemctl stop vendgate.service')).toBeLessThan(calls.lastIndexOf('systemctl restart vendgate.service'));
  });

  it(
    'an update from a checkout builds the release from its sources, never the dist/ left in the checkout',
    { timeout: 120_000 },
    async () => {
      const pi = await pis.installed();
      const checkout = pi.source('1.2.0', (dir) => {
        cpSync(join(REPO, 'src'), join(dir, 'src'), { recursive: true });
        cpSync(join(REPO, 'tsconfig.json'), join(dir, 'tsconfig.json'));
        for (const entry of ['dist/main.js', 'dist/vendgate.js'])
          writeFileSync(join(dir, entry), "process.stderr.write('stale build\\n'); process.exit(1);\n");
      });

      const update = await pi.run('update.sh', [checkout], checkout);

      expect(update.stderr).not.toMatch(/error/);
      expect(update.code).toBe(0);
      expect(update.stderr).toMatch(/building 1\.2\.0 from source/);
      const release = `opt/vendgate/releases/${current(pi)}`;
      expect(pi.read(`${release}/dist/main.js`)).not.toContain('stale build');
      expect(pi.read(`${release}/dist/vendgate.js`)).not.toContain('stale build');
      expect(pi.exists(`${release}/src`)).toBe(false);
      expect(pi.exists(`${release}/docs/operations.md`)).toBe(true);
      const calls = pi.calls();
      for (const call of ['npm ci --no-audit --no-fund', 'npm run build', 'npm prune --omit=dev --no-audit --no-fund'])
        expect(calls).toContain(call);
      expect(calls.indexOf('npm run build')).toBeLessThan(calls.indexOf('npm prune --omit=dev --no-audit --no-fund'));
    },
  );

  it('backs up with VACUUM INTO: one self-contained file, integrity ok, holding the orders taken before the update', async () => {
    const pi = await pis.installed();
    const created = await fetch(`${pi.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slot: 'A1' }),
    });
    expect(created.status).toBe(201);
    const order = (await created.json()) as { orderId: number };

    const update = await pi.run('update.sh', [pi.source('1.1.0')], pi.source('1.1.0'));

    expect(update.code, update.stderr).toBe(0);
    // Where only root writes (the service user controls /var/lib/vendgate).
    const dir = join(pi.root, 'var/backups/vendgate');
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^vendgate-\d{8}T\d{6}Z\.db$/);
    expect(update.stdout).toContain(`database backed up to ${join(dir, files[0]!)} (VACUUM INTO)`);
    const backup = new Database(join(dir, files[0]!), { readonly: true });
    try {
      expect(backup.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(backup.pragma('journal_mode', { simple: true })).toBe('delete');
      expect(backup.prepare('SELECT id FROM orders').all()).toEqual([{ id: order.orderId }]);
    } finally {
      backup.close();
    }
  });

  it('--help says how to call it and what it does, and touches nothing', async () => {
    const pi = await pis.fresh();
    const src = pi.source('1.0.0');
    const help = await pi.run('update.sh', ['--help'], src);
    expect(help.stderr).toBe('');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('sudo vendgate-update ARTEFACT [--key FILE]');
    expect(help.stdout).toContain('SHA256SUMS and SHA256SUMS.minisig beside it');
    expect(help.stdout).toContain('the previous release comes back by itself');
    expect(pi.calls()).toEqual([]);
    const bogus = await pi.run('update.sh', ['--bogus'], src);
    expect(bogus.code).toBe(1);
    expect(bogus.stderr).toContain('unknown option --bogus (see --help)');
    const missing = await pi.run('update.sh', ['/nonexistent/vendgate_9.9.9_arm64.deb'], src);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no such artefact or directory: /nonexistent/vendgate_9.9.9_arm64.deb (see --help)');
    expect(pi.calls()).toEqual([]);
  });

  it('refuses to run where vendgate was never installed', async () => {
    const pi = await pis.fresh();
    const src = pi.source('1.0.0');
    const update = await pi.run('update.sh', [src], src);
    expect(update.code).toBe(1);
    expect(update.stderr).toMatch(/vendgate is not installed here .* run scripts\/install-pi\.sh first/);
  });
});
