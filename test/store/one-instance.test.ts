import Database from 'better-sqlite3';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startService, type Service } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { runMain as runCompiled } from '../helpers/process.js';

/**
 * One service per database, with two real processes: the second `vendgate start` on the same
 * database exits at once (75) naming the first one's pid, having changed nothing — even with other
 * ports, where it used to start, run recovery over the first one's work, and serve.
 */
/** The compiled CLI to its end, failed after `timeoutMs` (a second start that serves instead of exiting). */
const runMain = (args: string[], timeoutMs = 30_000) => runCompiled(args, { timeoutMs });

/** Row counts of every table: "did anything change?" across processes. */
function snapshot(dbPath: string): Record<string, number> {
  const db = new Database(dbPath, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    return Object.fromEntries(
      tables.map(({ name }) => [name, (db.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n]),
    );
  } finally {
    db.close();
  }
}

/** A copy of the service's config with other ports: a second unit, a technician's shell. */
async function configWithOtherPorts(svc: Service): Promise<string> {
  const config = parse(readFileSync(svc.configPath, 'utf8'));
  config.http.local.port = await freePort();
  config.http.webhook.port = await freePort();
  const path = join(svc.dir, 'second.yaml');
  writeFileSync(path, stringify(config));
  return path;
}

describe('one instance per database (two real processes)', () => {
  let svc: Service;
  beforeAll(async () => {
    svc = await startService();
    const created = await fetch(`${svc.localUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"slot":"A1"}',
    });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('a second start on the same database, even on other ports, exits 75 naming the holder, and changes nothing', async () => {
    const before = snapshot(svc.dbPath);
    const second = await runMain(['start', '--config', await configWithOtherPorts(svc)]);
    expect(second.code).toBe(75);
    expect(second.stderr).toContain('VG_ERR_ALREADY_RUNNING');
    expect(second.stderr).toContain(`process ${svc.pid}`);
    expect(second.stdout).not.toContain('vendgate ready');
    expect(snapshot(svc.dbPath)).toEqual(before);
    // The first one still serves.
    expect((await fetch(`${svc.localUrl}/healthz`)).status).toBe(200);
  });

  it('the same with the same configuration (ports taken by the holder too): the lock is reported, not the ports', async () => {
    const second = await runMain(['start', '--config', svc.configPath]);
    expect(second.code).toBe(75);
    expect(second.stderr).toContain(`process ${svc.pid}`);
  });

  it('read-only commands keep working beside the running service', async () => {
    const orders = await runMain(['orders', '--config', svc.configPath, '--json']);
    expect(orders.code).toBe(0);
    expect(JSON.parse(orders.stdout)).toHaveLength(1);
    const exported = await runMain(['export', '--config', svc.configPath]);
    expect(exported.code).toBe(0);
    expect(exported.stdout.split('\r\n').filter(Boolean)).toHaveLength(2);
    const selftest = await runMain(['selftest', '--config', svc.configPath, '--json'], 60_000);
    const report = JSON.parse(selftest.stdout);
    expect(report.checks.find((c: { name: string }) => c.name === 'database')).toMatchObject({ status: 'PASS' });
  }, 90_000);

  it('migrate refuses to run under the running service (exit 75) and leaves the database alone', async () => {
    const before = snapshot(svc.dbPath);
    const migrate = await runMain(['migrate', '--config', svc.configPath]);
    expect(migrate.code).toBe(75);
    expect(migrate.stderr).toContain(`process ${svc.pid}`);
    expect(snapshot(svc.dbPath)).toEqual(before);
  });

  it('after the holder is killed with SIGKILL, the lock is free at once: a new start succeeds', async () => {
    await svc.kill('SIGKILL');
    await svc.restart();
    expect((await fetch(`${svc.localUrl}/healthz`)).status).toBe(200);
  });
});

describe('a port in use', () => {
  const dir = tempDir();
  let blocker: Server;
  afterEach(() => {
    blocker?.close();
  });
  afterAll(() => dir.cleanup());

  it.each(['local', 'webhook'] as const)(
    'the %s port taken by another program: exit 78 naming port, setting and how to find it, before the database exists',
    async (which) => {
      const port = await freePort();
      blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
      const dbPath = join(dir.path, `${which}.db`);
      const other = await freePort();
      const configPath = join(dir.path, `${which}.yaml`);
      writeFileSync(
        configPath,
        stringify({
          device: { id: 'port-test', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
          http: {
            local: { host: '127.0.0.1', port: which === 'local' ? port : other },
            webhook: { host: '127.0.0.1', port: which === 'webhook' ? port : other },
          },
          storage: { path: dbPath },
          actuator: { kind: 'sim', sim: { logPath: join(dir.path, 'act.jsonl') } },
          mqtt: { url: '' },
        }),
      );
      const result = await runMain(['start', '--config', configPath]);
      expect(result.code).toBe(78);
      expect(result.stderr).toContain(`http.${which}.port`);
      expect(result.stderr).toContain(`port ${port}`);
      expect(result.stderr).toContain(`ss -ltnp 'sport = :${port}'`);
      expect(existsSync(dbPath)).toBe(false);
      expect(existsSync(join(dir.path, 'sandbox.db'))).toBe(false);
    },
  );
});
