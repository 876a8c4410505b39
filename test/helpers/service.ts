/**
 * Runs the REAL compiled service (`node dist/main.js start --config <tmp yaml>`) as a child process,
 * for tests that need the whole thing: kiosk e2e, crash tests, chaos, soak. Build first
 * (`npm test` does; alone: `npm run build`).
 *
 *   const svc = await startService({ config: { poll: { intervalMs: 100 } }, env: { VENDGATE_CRASH_AT: 'after_claim_commit' } });
 *   svc.localUrl, svc.webhookUrl          // http://127.0.0.1:<port>; both stay the same across restart()
 *   svc.dir, svc.dbPath, svc.configPath   // the temp directory: database, sandbox.db, actuations.jsonl
 *   await svc.waitFor(() => svc.readSimLog().length === 1, { timeoutMs: 5_000, what: 'one actuation' });
 *   svc.readSimLog()                      // the sim actuator's JSON lines: the physical truth
 *   svc.logs()                            // parsed JSON log lines of every run so far
 *   await svc.kill('SIGKILL'); await svc.restart({ env: {} });
 *   await svc.stop();                     // SIGTERM and wait; then removes the temp dir it made
 *
 * Defaults: sandbox provider, sim actuator (20 ms), MQTT off, both listeners on 127.0.0.1 with free
 * ports chosen before the first start (so a simulator can be given the webhook URL up front).
 * `config` is merged section by section over the defaults; secrets go in `env` (the loader refuses
 * them in the file): VENDGATE_WEBHOOK_SECRETS, VENDGATE_PROVIDER_CLIENT_SECRET, VENDGATE_PROVIDER_API_KEY.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { expect } from 'vitest';
import { commandSettings } from './operator.js';
import { waitFor } from './wait.js';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

export interface ServiceOptions {
  /** Merged over the defaults, section by section (nested plain objects are merged, arrays replaced). */
  config?: Record<string, unknown>;
  /** Extra environment of the child (on top of this process's). */
  env?: Record<string, string>;
  /** Use this directory instead of a fresh temp one (it is then not removed by stop()). */
  dir?: string;
  /** Ports to use; free ones are picked when absent. */
  localPort?: number;
  webhookPort?: number;
  /** How long to wait for `vendgate ready`. Default 15 s. */
  readyTimeoutMs?: number;
  /** The entry to run: dist/main.js unless given (dist/vendgate.js, the one-file build the units start). */
  main?: string;
  /** The node to run it with, and arguments before the entry (e.g. qemu-aarch64 -L … node): this process's node unless given. */
  node?: string[];
  /** The child's working directory: this process's unless given. */
  cwd?: string;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Service {
  readonly localUrl: string;
  readonly webhookUrl: string;
  readonly dir: string;
  readonly dbPath: string;
  readonly configPath: string;
  /** The running child's pid, or null between a kill and a restart. */
  readonly pid: number | null;
  /** Parsed JSON log lines (stdout) of every run so far; non-JSON lines are skipped. */
  logs(): Record<string, any>[];
  /** stdout of every run so far, line by line, JSON or not (V8's `--trace-*` lines, a QR drawn in a terminal). */
  stdout(): string[];
  /** stderr of every run so far. */
  stderr(): string;
  /** The sim actuator log, one object per actuation. */
  readSimLog(): { orderId: number; slot?: string | null; at?: string; [key: string]: unknown }[];
  /** The suite's one wait (test/helpers/wait.ts), here for convenience. */
  waitFor: typeof waitFor;
  /** Sends a signal and waits for the process to exit. */
  kill(signal?: NodeJS.Signals): Promise<Exit>;
  /** Resolves when the current run exits by itself (e.g. a crash point). */
  exited(): Promise<Exit>;
  /** Starts again on the same directory, config and ports (after kill() or a crash); `env` defaults to the first start's. */
  restart(options?: { env?: Record<string, string> }): Promise<void>;
  /** SIGTERM, wait for the exit, then remove the temp directory if this helper made it. Safe twice. */
  stop(): Promise<void>;
}

/**
 * A TCP port for a child process to listen on, free now and kept for this test process alone.
 *
 * Not a listen(0) number: such a port lies in the kernel's ephemeral range, so between our close()
 * and the child's listen() any other process's listen(0) or outgoing connection may be handed it
 * (seen in CI: a service refused to start, "port … is already in use", with a second suite beside
 * this one). The port is taken below that range, where the kernel hands out nothing, and reserved
 * with a lock file that every test process on the machine honours (O_EXCL; a lock whose process is
 * gone is taken over), so two suites side by side, or two tests of one, never pick the same one.
 * The locks of this process go when it exits.
 */
export async function freePort(): Promise<number> {
  return reservedPort();
}

const PORT_LOCKS = join(tmpdir(), 'vendgate-test-ports');
const reserved: string[] = [];

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function reservePort(port: number): boolean {
  mkdirSync(PORT_LOCKS, { recursive: true });
  const lock = join(PORT_LOCKS, String(port));
  try {
    writeFileSync(lock, String(process.pid), { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    let owner = 0;
    try {
      owner = Number(readFileSync(lock, 'utf8'));
    } catch {
      return false; // another taker is replacing it right now
    }
    if (!Number.isInteger(owner) || owner <= 0 || alive(owner)) return false;
    // The process that held it is gone: take it over, unless another taker was faster.
    try {
      renameSync(lock, `${lock}.stale-${process.pid}`);
      rmSync(`${lock}.stale-${process.pid}`, { force: true });
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
    } catch {
      return false;
    }
  }
  if (reserved.length === 0) {
    process.once('exit', () => {
      for (const file of reserved) rmSync(file, { force: true });
    });
  }
  reserved.push(lock);
  return true;
}

/** The first port of the kernel's ephemeral range: listen(0) and outgoing connections use ports from here up. */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 21_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/**
 * A port that nothing listens on and nothing will: below the ephemeral range, where neither
 * listen(0) nor an outgoing connection of any process lands, refused right now, and reserved for
 * this process so that no other test's freePort() hands it to a service. For settings of a service
 * that is NOT running.
 */
export async function unusedPort(): Promise<number> {
  return reservedPort();
}

/** Below the ephemeral range, refused right now, and reserved for this process (see freePort). */
async function reservedPort(): Promise<number> {
  const top = ephemeralStart();
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * (top - 20_000));
    if (reservePort(port) && (await refused(port))) return port;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `over` merged over `base` section by section: nested plain objects are merged, anything else (arrays too) replaced. */
export function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    out[key] = isPlainObject(value) && isPlainObject(out[key]) ? merge(out[key] as Record<string, unknown>, value) : value;
  }
  return out;
}

/**
 * Keeps a child's stdout as lines, appended to `lines` once each is complete (a restarted child adds
 * to the same list), and hands its stderr to `onStderr` as it comes.
 */
export function keepOutput(child: ChildProcess, lines: string[], onStderr: (text: string) => void): void {
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr!.on('data', (chunk: Buffer) => onStderr(chunk.toString()));
}

/** The lines that are JSON (the log), parsed; the others (a QR drawn in a terminal) skipped. */
export function jsonLines(lines: string[]): Record<string, any>[] {
  return lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, any>];
    } catch {
      return [];
    }
  });
}

// A test that fails before stop() must not leave services running after the worker exits.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function startService(options: ServiceOptions = {}): Promise<Service> {
  const main = options.main ?? MAIN;
  if (!existsSync(main)) throw new Error(`${main} does not exist: run \`npm run build\` first (npm test does)`);
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'vendgate-svc-'));
  const localPort = options.localPort ?? (await freePort());
  const webhookPort = options.webhookPort ?? (await freePort());
  const dbPath = join(dir, 'vendgate.db');
  const simLogPath = join(dir, 'actuations.jsonl');
  const defaults = {
    device: {
      id: 'svc-test',
      mode: 'vending',
      currency: 'MNT',
      catalog: [
        { slot: 'A1', name: 'Water', price: 1500 },
        { slot: 'A2', name: 'Cola', price: 2500 },
      ],
    },
    provider: { name: 'sandbox', invoiceTtlSec: 120 },
    poll: { intervalMs: 200 },
    // Chaos, crash and soak runs order far faster than a customer and replace open orders on purpose:
    // no order rate limit, no double-press merging (local-api-guard.test.ts sets its own).
    http: {
      local: { host: '127.0.0.1', port: localPort, ordersPerMinute: 1_000_000, doublePressWindowMs: 0 },
      webhook: { host: '127.0.0.1', port: webhookPort },
    },
    storage: { path: dbPath },
    actuator: { kind: 'sim', sim: { logPath: simLogPath, durationMs: 20 } },
    mqtt: { url: '' },
    log: { level: 'info' },
    // The tests' operator (test/helpers/operator.ts): its signed commands run on the service.
    commands: { keys: commandSettings().keys },
  };
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, stringify(merge(defaults, options.config ?? {})));

  const lines: string[] = [];
  let stderrText = '';
  let child: ChildProcess | null = null;
  let exit: Promise<Exit> = Promise.resolve({ code: null, signal: null });
  let stopped = false;

  async function launch(env: Record<string, string>): Promise<void> {
    const [node = process.execPath, ...nodeArgs] = options.node ?? [];
    const proc = spawn(node, [...nodeArgs, main, 'start', '--config', configPath], {
      env: { ...process.env, ...env },
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    live.add(proc);
    const firstLine = lines.length;
    keepOutput(proc, lines, (text) => {
      stderrText += text;
    });
    let exited: Exit | null = null;
    exit = new Promise((resolve) =>
      proc.once('exit', (code, signal) => {
        live.delete(proc);
        if (child === proc) child = null;
        exited = { code, signal };
        resolve(exited);
      }),
    );
    await waitFor(
      () => {
        if (exited)
          throw new Error(
            `the service exited before it was ready (${JSON.stringify(exited)}):\n${stderrText}\n${lines.slice(firstLine).join('\n')}`,
          );
        return lines.slice(firstLine).some((line) => line.includes('"vendgate ready"'));
      },
      { timeoutMs: options.readyTimeoutMs ?? 15_000, what: 'the service to log "vendgate ready"' },
    ).catch((err: Error) => {
      // Keep the cause readable: the early-exit message, not "timed out … : Error: …".
      throw exited ? new Error(err.message.replace(/^timed out.*?: Error: /s, '')) : err;
    });
  }

  await launch(options.env ?? {});

  const service: Service = {
    localUrl: `http://127.0.0.1:${localPort}`,
    webhookUrl: `http://127.0.0.1:${webhookPort}`,
    dir,
    dbPath,
    configPath,
    get pid() {
      return child?.pid ?? null;
    },
    logs: () => jsonLines(lines),
    stdout: () => [...lines],
    stderr: () => stderrText,
    readSimLog() {
      if (!existsSync(simLogPath)) return [];
      return readFileSync(simLogPath, 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line));
    },
    waitFor,
    async kill(signal = 'SIGKILL') {
      const running = child;
      if (!running) return exit;
      running.kill(signal);
      return exit;
    },
    exited: () => exit,
    async restart(restartOptions = {}) {
      if (child) throw new Error('restart() while the service is running: kill() it first');
      await launch(restartOptions.env ?? options.env ?? {});
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child) {
        const running = child;
        const forced = setTimeout(() => running.kill('SIGKILL'), 10_000);
        running.kill('SIGTERM');
        await exit;
        clearTimeout(forced);
      }
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return service;
}

/** POST to a service's API: the body as JSON when there is one, none otherwise; the raw response. */
export const postJson = (url: string, body?: unknown): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });

/**
 * A customer's order for `slot` on the service whose local listener is `localUrl`, paid on the
 * sandbox's pay page: created (201) and paid (204), or the test fails here.
 */
export async function paidOrder(localUrl: string, slot = 'A1'): Promise<{ orderId: number; invoiceId: string }> {
  const created = await postJson(`${localUrl}/api/orders`, { slot });
  expect(created.status).toBe(201);
  const order = (await created.json()) as { orderId: number; invoiceId: string };
  expect((await postJson(`${localUrl}/sandbox/pay/${order.invoiceId}`)).status).toBe(204);
  return order;
}

/** The order's state as the local API shows it (`GET /api/orders/<id>`). */
export async function orderState(localUrl: string, orderId: number): Promise<string> {
  return ((await (await fetch(`${localUrl}/api/orders/${orderId}`)).json()) as { state: string }).state;
}

/** A sandbox order for `slot` made on the service's local API: its answer (the order, its invoice, where to pay it). */
export async function sandboxOrder(
  svc: Pick<Service, 'localUrl'>,
  slot = 'A1',
): Promise<{ orderId: number; invoiceId: string; payUrl: string }> {
  return (await (await postJson(`${svc.localUrl}/api/orders`, { slot })).json()) as { orderId: number; invoiceId: string; payUrl: string };
}

/** What POST /api/orders answers for a new order. */
export interface CreatedOrder {
  orderId: number;
  payUrl: string;
  qrSvg: string;
}

/** Orders `slot` on a running service (POST /api/orders) and returns its answer. */
export async function orderOn(localUrl: string, slot = 'A1'): Promise<CreatedOrder> {
  return (await (await postJson(`${localUrl}/api/orders`, { slot })).json()) as CreatedOrder;
}

/** Waits until the service's API says the order is vended. */
export async function waitVended(localUrl: string, orderId: number, what = 'the vend'): Promise<void> {
  await waitFor(async () => ((await (await fetch(`${localUrl}/api/orders/${orderId}`)).json()) as { state: string }).state === 'vended', {
    timeoutMs: 15_000,
    what,
  });
}
