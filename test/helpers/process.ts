import { spawn } from 'node:child_process';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

/** How a process ended and what it printed. */
export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command args` to its end (stdin closed) and collects its stdout and stderr. With
 * `timeoutMs`, a process still running by then is killed (SIGKILL) and the promise rejected with
 * what it printed so far.
 */
export function runProcess(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            child.kill('SIGKILL');
            reject(new Error(`${[command, ...args].join(' ')} did not exit within ${options.timeoutMs} ms: ${stdout}\n${stderr}`));
          }, options.timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The compiled CLI (`node dist/main.js <args>`) to its end: e.g. a `start` that is expected to stop by itself. */
export function runMain(args: string[], options: { timeoutMs?: number } = {}): Promise<Run> {
  return runProcess(process.execPath, [MAIN, ...args], options);
}
