import type { ChildProcess } from 'node:child_process';
import type { Logger } from '../../util/logger.js';
import { ErrorCodes, VendgateError } from '../../util/errors.js';
import { childProcess } from '../../util/lazy-builtins.js';
import type { Level } from './onoff.js';
import type { DigitalOutput } from './output.js';

export interface GpiosetOptions {
  /** Executable, default `gpioset` from PATH. */
  command?: string;
  /** libgpiod major version; detected with `gpioset --version` when absent. */
  version?: 1 | 2;
  chip: string;
  /** Chip-relative line offset: the BCM number on the Pi's SoC chip (no sysfs base). */
  offset: number;
  initialLevel: Level;
  logger: Logger;
  /** How long a fresh gpioset must stay alive to count as holding the line. */
  settleMs?: number;
}

const DEFAULT_SETTLE_MS = 150;
const KILL_GRACE_MS = 1_000;

/** Runs `gpioset --version` and returns the libgpiod major version. */
export async function detectGpiosetVersion(command = 'gpioset'): Promise<1 | 2> {
  const output = await new Promise<string>((resolve, reject) => {
    const child = childProcess().spawn(command, ['--version'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    child.on('error', (err) =>
      reject(
        new VendgateError(
          ErrorCodes.HARDWARE,
          `cannot run ${command} (${(err as NodeJS.ErrnoException).code}): install libgpiod tools (apt install gpiod) or use actuator.relay.driver: sysfs`,
          { cause: err },
        ),
      ),
    );
    child.on('close', () => resolve(text));
  });
  const match = /v(\d+)\.\d+/.exec(output);
  if (match?.[1] === '1') return 1;
  if (match?.[1] === '2') return 2;
  throw new VendgateError(
    ErrorCodes.HARDWARE,
    `cannot tell the libgpiod version from "${output.trim().split('\n')[0]}": expected gpioset v1.x or v2.x`,
  );
}

/** The arguments that set one line and keep holding it until SIGTERM (v1 needs -m signal; v2 holds by default). */
export function gpiosetArgs(version: 1 | 2, chip: string, offset: number, level: Level): string[] {
  return version === 1 ? ['-m', 'signal', chip, `${offset}=${level}`] : ['-c', chip, `${offset}=${level}`];
}

/**
 * libgpiod keeps a line's value only while the requesting process lives, so each level is held by a
 * running gpioset. Changing level stops the holder and starts a new one; the line is released for
 * that instant (the Pi's pin keeps its latch, but this driver is for kernels without sysfs GPIO).
 */
export async function openGpiosetOutput(options: GpiosetOptions): Promise<DigitalOutput> {
  const command = options.command ?? 'gpioset';
  const version = options.version ?? (await detectGpiosetVersion(command));
  const settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
  const log = options.logger;
  let holder: ChildProcess | null = null;
  let closed = false;

  async function stopHolder(): Promise<void> {
    const child = holder;
    holder = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
      child.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }

  /** Starts the holder. With `confirm`, waits settleMs and throws if it died; else only waits for the spawn. */
  async function hold(level: Level, confirm: boolean): Promise<void> {
    const args = gpiosetArgs(version, options.chip, options.offset, level);
    const child = childProcess().spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const describeExit = (code: number | null) =>
      `${command} ${args.join(' ')} exited with ${code}: ${stderr.trim() || 'no message'} — check actuator.relay.chip (gpiodetect) and that no other program holds the line (gpioinfo)`;
    holder = child;
    child.once('exit', (code, signal) => {
      if (holder !== child) return;
      holder = null;
      fault = describeExit(code);
      log.error({ code, signal, stderr: stderr.trim() }, 'gpioset holding the relay line exited');
    });
    // Success has no positive signal: the holder is good if it starts and does not exit at once.
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => {
        cleanup();
        holder = null;
        reject(
          new VendgateError(ErrorCodes.HARDWARE, `cannot run ${command}: ${err.message} — install gpiod (apt install gpiod)`, {
            cause: err,
          }),
        );
      };
      const onSpawn = () => {
        if (!confirm) {
          cleanup();
          resolve();
        }
      };
      const settled = confirm
        ? setTimeout(() => {
            cleanup();
            resolve();
          }, settleMs)
        : undefined;
      const onExit = (code: number | null) => {
        cleanup();
        reject(new VendgateError(ErrorCodes.HARDWARE, describeExit(code)));
      };
      function cleanup() {
        clearTimeout(settled);
        child.off('error', onError);
        child.off('spawn', onSpawn);
        child.off('exit', onExit);
      }
      child.once('error', onError);
      child.once('spawn', onSpawn);
      child.once('exit', onExit);
    });
  }

  /** Set when a holder died on its own; verify() reports it once. */
  let fault: string | null = null;
  let current: Level | null = null;

  await hold(options.initialLevel, true);
  current = options.initialLevel;
  return {
    description: `gpioset v${version} ${options.chip} line ${options.offset}`,
    async set(level) {
      if (closed) throw new Error('gpioset output is closed');
      if (level === current && holder) return;
      await stopHolder();
      current = null;
      // No settle wait here: it would stretch every pulse. verify() checks the train afterwards.
      await hold(level, false);
      current = level;
    },
    async verify() {
      if (closed) throw new Error('gpioset output is closed');
      await new Promise((resolve) => setTimeout(resolve, settleMs));
      const found = fault;
      fault = null;
      if (found) throw new VendgateError(ErrorCodes.HARDWARE, found);
    },
    async close() {
      if (closed) return;
      closed = true;
      await stopHolder();
    },
  };
}
