/**
 * Real Mosquitto brokers for the fleet tests, started from the SHIPPED configuration files
 * (config/fleet/mosquitto/*.conf, fleet.acl) with only paths, ports and the bridge address rewritten.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { waitFor } from '../../../helpers/wait.js';

export const FLEET_CONFIG = new URL('../../../../config/fleet/', import.meta.url).pathname;
export const TLS_DIR = new URL('../../../mqtt/fixtures/tls/', import.meta.url).pathname;

/** Debian installs the broker in /usr/sbin, which a non-root PATH may lack. */
const MOSQUITTO = existsSync('/usr/sbin/mosquitto') ? '/usr/sbin/mosquitto' : 'mosquitto';

/** A password file with one line per account (mosquitto_passwd hashes them). */
export function writePasswordFile(path: string, accounts: Record<string, string>): void {
  let first = true;
  for (const [user, password] of Object.entries(accounts)) {
    const result = spawnSync('mosquitto_passwd', [...(first ? ['-c'] : []), '-b', path, user, password], { encoding: 'utf8' });
    if (result.error)
      throw new Error(`mosquitto_passwd is missing: run scripts/install-test-deps.sh (Debian package mosquitto) (${result.error.message})`);
    if (result.status !== 0) throw new Error(`mosquitto_passwd failed for ${user}: ${result.stderr}`);
    first = false;
  }
}

export interface Mosquitto {
  readonly port: number;
  readonly url: string;
  start(): Promise<void>;
  /** SIGTERM (Mosquitto saves its persistence database) and wait for the exit. */
  stop(): Promise<void>;
  log(): string;
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * One broker from a shipped .conf: `/etc/mosquitto/` → `dir`, `/var/lib/mosquitto/` → `dir/data/`,
 * `listener 8883` → `listener <port> 127.0.0.1`, and `address relay-broker.example:8883` →
 * the given bridge target.
 */
export function mosquittoFrom(
  template: string,
  options: { dir: string; port: number; bridgeTo?: number; bridgePassword?: string },
): Mosquitto {
  const { dir, port } = options;
  mkdirSync(join(dir, 'data'), { recursive: true });
  mkdirSync(join(dir, 'certs'), { recursive: true });
  for (const file of ['ca.pem', 'server.pem', 'server.key']) copyFileSync(join(TLS_DIR, file), join(dir, 'certs', file));
  copyFileSync(join(FLEET_CONFIG, 'mosquitto', 'fleet.acl'), join(dir, 'fleet.acl'));
  let text = readFileSync(join(FLEET_CONFIG, 'mosquitto', template), 'utf8')
    .replaceAll('/etc/mosquitto/', `${dir}/`)
    .replaceAll('/var/lib/mosquitto/', `${dir}/data/`)
    .replace(/^listener 8883$/m, `listener ${port} 127.0.0.1`)
    .replace(/^autosave_interval .*$/m, 'autosave_interval 1');
  // Started as root, Mosquitto drops to the user "mosquitto", who may not read a test's temp dir.
  if (process.getuid?.() === 0) text = `user root\n${text}`;
  if (options.bridgeTo !== undefined) {
    text = text
      .replace(/^address .*$/m, `address localhost:${options.bridgeTo}`)
      .replace(/^remote_password .*$/m, `remote_password ${options.bridgePassword ?? ''}`)
      // The test CA's certificate names localhost, not relay-broker.example; retry the bridge quickly.
      .replace(/^restart_timeout .*$/m, 'restart_timeout 1 2');
  }
  const confPath = join(dir, template);
  writeFileSync(confPath, text);
  let child: ChildProcess | null = null;
  let exit: Promise<void> = Promise.resolve();
  let output = '';
  return {
    port,
    url: `mqtts://127.0.0.1:${port}`,
    async start() {
      if (child) return;
      const proc = spawn(MOSQUITTO, ['-c', confPath], { stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      proc.stdout!.on('data', (c: Buffer) => {
        output += c.toString();
      });
      proc.stderr!.on('data', (c: Buffer) => {
        output += c.toString();
      });
      exit = new Promise((resolve) =>
        proc.once('exit', () => {
          if (child === proc) child = null;
          resolve();
        }),
      );
      liveBrokers.add(proc);
      proc.once('exit', () => liveBrokers.delete(proc));
      await waitFor(
        async () => {
          if (!child) throw new Error(`mosquitto exited:\n${output}`);
          return portAnswers(port);
        },
        { timeoutMs: 10_000, what: `mosquitto on ${port}` },
      );
    },
    async stop() {
      const running = child;
      if (!running) return;
      running.kill('SIGTERM');
      await exit;
    },
    log: () => output,
  };
}

const liveBrokers = new Set<ChildProcess>();
process.once('exit', () => {
  for (const b of liveBrokers) b.kill('SIGKILL');
});
