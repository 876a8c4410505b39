import { spawn } from 'node:child_process';
import { closeSync, existsSync, fstatSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { JOURNAL_PRIORITY, journalLine, pickLogFormat } from '../../src/util/logger.js';
import { nodeSupport, maintainedNodeLines } from '../../src/util/node-support.js';
import { freePort } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function holdPort(): Promise<{ port: number; server: Server }> {
  const port = await freePort();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  cleanups.push(() => server.close());
  return { port, server };
}

function config(dir: string, localPort: number, webhookPort: number): string {
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    stringify({
      device: { id: 'log-test', catalog: [{ slot: 'A1', name: 'Water', price: 1500 }] },
      http: { local: { host: '127.0.0.1', port: localPort }, webhook: { host: '127.0.0.1', port: webhookPort } },
      storage: { path: join(dir, 'vendgate.db') },
      actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl') } },
      mqtt: { url: '' },
    }),
  );
  return path;
}

/** Runs `vendgate start` with stdout on a file, as journald hands a service its stream, until it exits. */
async function startWithStdoutFile(configPath: string, dir: string, env: Record<string, string | undefined>) {
  const outPath = join(dir, 'stdout');
  const fd = openSync(outPath, 'w');
  const stat = fstatSync(fd);
  const journalStream = `${stat.dev}:${stat.ino}`;
  const child = spawn(process.execPath, [MAIN, 'start', '--config', configPath], {
    stdio: ['ignore', fd, 'pipe'],
    env: {
      ...process.env,
      JOURNAL_STREAM: undefined,
      ...(typeof env.JOURNAL_STREAM === 'string' ? { JOURNAL_STREAM: env.JOURNAL_STREAM.replace('MATCH', journalStream) } : {}),
    },
  });
  closeSync(fd);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stderr, lines: readFileSync(outPath, 'utf8').split('\n').filter(Boolean) };
}

describe('service logs', () => {
  it('under journald (JOURNAL_STREAM names our stdout) every line carries its syslog priority, so journalctl -p works', async () => {
    expect(existsSync(MAIN), 'npm run build first').toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'vendgate-logs-'));
    const { port } = await holdPort();
    const run = await startWithStdoutFile(config(dir, port, await freePort()), dir, { JOURNAL_STREAM: 'MATCH' });

    expect(run.code).toBe(78);
    for (const line of run.lines) expect(line).toMatch(/^<[2-7]>\{"level":"(fatal|error|warn|info|debug|trace)"/);
    const parsed = run.lines.map((line) => ({ priority: Number(/^<(\d)>/.exec(line)![1]), entry: JSON.parse(line.replace(/^<\d>/, '')) }));
    for (const { priority, entry } of parsed) expect(priority).toBe(JOURNAL_PRIORITY[entry.level]);
    expect(parsed.find((p) => p.entry.msg === 'settings loaded')?.priority).toBe(6);
    const fatal = parsed.find((p) => p.entry.msg === 'could not start')!;
    expect(fatal.priority).toBe(2);
    // Port in use: which port, which setting, how to find the other program; no stack trace.
    expect(fatal.entry).toMatchObject({ code: 'VG_ERR_PORT_IN_USE', port, setting: 'http.local.port' });
    expect(fatal.entry.message).toContain(`port ${port} (http.local.port in ${join(dir, 'config.yaml')}) is already in use`);
    expect(fatal.entry.hint).toContain(`ss -ltnp 'sport = :${port}'`);
    expect(JSON.stringify(fatal.entry)).not.toMatch(/\bat .*\.js:\d+/);
    expect(run.stderr).toContain(`http.local.port: port ${port} on 127.0.0.1 is already in use`);
  });

  it('a JOURNAL_STREAM inherited from elsewhere (not our stdout) leaves plain JSON lines with level names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vendgate-logs-'));
    const { port } = await holdPort();
    const run = await startWithStdoutFile(config(dir, await freePort(), port), dir, { JOURNAL_STREAM: '1:2' });

    expect(run.code).toBe(78);
    const entries = run.lines.map((line) => JSON.parse(line));
    expect(entries.map((e) => e.level)).toEqual(expect.arrayContaining(['info', 'fatal']));
    expect(entries.find((e) => e.msg === 'could not start')).toMatchObject({ port, setting: 'http.webhook.port' });
  });

  it('in a terminal the lines are pino-pretty text, not JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vendgate-logs-'));
    const configPath = config(dir, 0, 0);
    // `script` gives the child a real pseudo-terminal on stdout.
    const child = spawn('script', ['-qec', `${process.execPath} ${MAIN} start --config ${configPath}`, '/dev/null'], {
      env: { ...process.env, JOURNAL_STREAM: '', TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    cleanups.push(() => child.kill('SIGKILL'));
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString().replace(/\x1b\[[0-9;]*m/g, '');
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await waitFor(() => /vendgate ready/.test(text), { timeoutMs: 60_000, what: 'vendgate ready in the terminal' });
    child.kill('SIGTERM');
    await exited;
    expect(text).toMatch(/INFO.*settings loaded/);
    expect(text).toMatch(/INFO.*vendgate ready/);
    expect(text).not.toMatch(/\{"level"/);
  }, 90_000);
});

describe('log format and Node support rules', () => {
  it('journal priorities follow syslog: fatal crit, error err, warn warning, info info, debug debug', () => {
    expect(journalLine('{"level":"warn","msg":"x"}')).toBe('<4>{"level":"warn","msg":"x"}');
    expect(journalLine('{"level":"fatal"}')).toMatch(/^<2>/);
    expect(journalLine('{"level":"error"}')).toMatch(/^<3>/);
    expect(journalLine('{"level":"debug"}')).toMatch(/^<7>/);
    expect(pickLogFormat({}, Object.assign(process.stdout, {}) as NodeJS.WritableStream)).toBe(process.stdout.isTTY ? 'pretty' : 'json');
  });

  it('Node 20 is past its end of life since 2026-05-01; 22 and 24 are maintained; 26 is unknown', () => {
    const at = Date.parse('2026-12-01T00:00:00Z');
    expect(nodeSupport('v20.20.2', at)).toEqual({ major: 20, endOfLife: '2026-04-30', status: 'end_of_life' });
    expect(nodeSupport('v20.20.2', Date.parse('2026-04-29T12:00:00Z')).status).toBe('supported');
    expect(nodeSupport('v22.12.0', at).status).toBe('supported');
    expect(nodeSupport('v24.1.0', at).status).toBe('supported');
    expect(nodeSupport('v26.0.0', at).status).toBe('unknown');
    expect(maintainedNodeLines(at)).toEqual([22, 24]);
  });
});
