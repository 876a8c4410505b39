// The kiosk e2e's launcher: one config file started several times on the same fixed port (the
// page must reconnect to the same URL). Other tests use test/helpers/service.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { jsonLines, keepOutput } from '../../helpers/service.js';
import { waitFor } from '../../helpers/wait.js';

const MAIN = new URL('../../../dist/main.js', import.meta.url).pathname;

/** A config for a real service on a temp directory: sandbox provider, sim actuator, ephemeral ports, no MQTT. */
export function writeServiceConfig(dir: string, overrides: Record<string, unknown> = {}): string {
  const config = {
    device: {
      id: 'crash-test',
      mode: 'vending',
      currency: 'MNT',
      catalog: [
        { slot: 'A1', name: 'Water', price: 1500 },
        { slot: 'A2', name: 'Cola', price: 2500 },
      ],
    },
    provider: { name: 'sandbox', invoiceTtlSec: 120 },
    poll: { intervalMs: 100 },
    http: { local: { host: '127.0.0.1', port: 0 }, webhook: { host: '127.0.0.1', port: 0 } },
    storage: { path: join(dir, 'vendgate.db') },
    actuator: { kind: 'sim', sim: { logPath: join(dir, 'actuations.jsonl'), durationMs: 20 } },
    mqtt: { url: '' },
    log: { level: 'info' },
    ...overrides,
  };
  const path = join(dir, 'config.yaml');
  writeFileSync(path, stringify(config));
  return path;
}

/** One run of `node dist/main.js start`; its stdout log lines are kept for assertions. */
export async function startService(configPath: string, env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(process.execPath, [MAIN, 'start', '--config', configPath], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  keepOutput(child, lines, (text) => {
    stderr += text;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  void exited.then((e) => {
    exit = e;
  });
  const ready = await waitFor(
    () => {
      if (exit) throw new Error(`service exited early (${JSON.stringify(exit)}): ${stderr}\n${lines.join('\n')}`);
      return jsonLines(lines).find((l) => l.msg === 'vendgate ready');
    },
    { timeoutMs: 60_000, what: 'the service to be ready' },
  );
  return {
    url: ready.localUrl as string,
    lines,
    exited,
    get stderr() {
      return stderr;
    },
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      child.kill(signal);
      return exited;
    },
  };
}

export function readSimLog(dir: string): { orderId: number }[] {
  const path = join(dir, 'actuations.jsonl');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}
