#!/usr/bin/env node
/**
 * The process: argv, signals, systemd notify, exit codes. The only file that exits.
 */
import { spawn } from 'node:child_process';
import { runCli, EXIT } from './cli/index.js';

/** systemd Type=notify: Node has no Unix datagram sockets, so `systemd-notify` sends for us (NotifyAccess=all). */
function notify(state: string): void {
  if (!process.env.NOTIFY_SOCKET) return;
  const child = spawn('systemd-notify', [state], { stdio: 'ignore' });
  child.on('error', () => {});
  child.unref();
}

const stopSignal = new Promise<string>((resolve) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve(signal));
});

// Crash tests name a point at which the process kills itself; never set outside tests.
const crashAt = process.env.VENDGATE_CRASH_AT;
const crashPoint = crashAt
  ? (name: string) => { if (name === crashAt) process.kill(process.pid, 'SIGKILL'); }
  : undefined;

process.on('unhandledRejection', (reason) => {
  process.stderr.write(`vendgate: unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}\n`);
  process.exit(EXIT.FAILURE);
});

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout, stderr: process.stderr, env: process.env, stopSignal, notify, isTty: Boolean(process.stderr.isTTY),
}, { crashPoint });
process.exit(code);
