import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { stringify } from 'yaml';
import { held } from '../bench/memory-cgroup.mjs';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

/** A TCP port that was free a moment ago: the service keeps it across restarts (the simulator posts to it). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const live = new Set();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * The real compiled service (`node dist/main.js start --config FILE`) as a child process.
 * `config()` is re-read at every start, so a segment between two kills can differ (actuator seed).
 */
export function createServiceProcess({ configPath, config, env, readyTimeoutMs = 20_000, onLine, main = MAIN, nodeArgs = [], wrap = [] }) {
  if (!existsSync(main)) throw new Error(`${main} does not exist: run npm run build first (npm run soak does)`);
  let child = null;
  let exit = Promise.resolve({ code: null, signal: null });
  let stderr = '';
  let starts = 0;

  async function start() {
    writeFileSync(configPath, stringify(config()));
    const startedAt = Date.now();
    // `wrap` runs the service under another program (the fsync bench: strace); `nodeArgs` are V8 flags.
    const argv = [process.execPath, ...nodeArgs, main, 'start', '--config', configPath];
    const [program, ...args] = [...wrap, ...argv];
    // held(): in a memory cgroup of the unit's limit when a bench asked for one (scripts/bench/memory-cgroup.mjs).
    const proc = held(() => spawn(program, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
    child = proc;
    live.add(proc);
    starts += 1;
    let exited = null;
    exit = new Promise((resolve) =>
      proc.once('exit', (code, signal) => {
        live.delete(proc);
        if (child === proc) child = null;
        exited = { code, signal };
        resolve(exited);
      }),
    );
    let buffer = '';
    let ready = false;
    const readyPromise = new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the service was not ready within ${readyTimeoutMs} ms:\n${stderr.slice(-2000)}`)),
        readyTimeoutMs,
      );
      proc.stdout.on('data', (chunk) => {
        buffer += chunk.toString();
        const lines = buffer.split('\n');
        buffer = lines.pop();
        for (const line of lines) {
          if (!ready && line.includes('"vendgate ready"')) {
            ready = true;
            clearTimeout(timer);
            resolve();
          }
          onLine?.(line);
        }
      });
      exit.then((e) => {
        if (!ready) {
          clearTimeout(timer);
          reject(new Error(`the service exited before it was ready (${JSON.stringify(e)}):\n${stderr.slice(-2000)}`));
        }
      });
    });
    proc.stderr.on('data', (chunk) => {
      stderr = (stderr + chunk.toString()).slice(-20_000);
    });
    await readyPromise;
    return { readyMs: Date.now() - startedAt, exited: () => exited };
  }

  return {
    start,
    get running() {
      return child !== null;
    },
    get pid() {
      return child?.pid ?? null;
    },
    get starts() {
      return starts;
    },
    stderr: () => stderr,
    /** Sends the signal and waits for the exit. */
    async kill(signal = 'SIGKILL') {
      const running = child;
      if (!running) return exit;
      running.kill(signal);
      return exit;
    },
    exited: () => exit,
  };
}
