#!/usr/bin/env node
/**
 * The process: argv, signals, systemd notify, exit codes. The only file that exits.
 */
import { spawn } from 'node:child_process';
import { runCli, EXIT } from './cli/index.js';
import { startWatchdog, watchdogIntervalMs, watchdogDatabasePath, databaseProbe, type Watchdog } from './selftest/index.js';

/** systemd Type=notify: Node has no Unix datagram sockets, so `systemd-notify` sends for us (NotifyAccess=all). */
function notify(state: string): void {
  if (!process.env.NOTIFY_SOCKET) return;
  const child = spawn('systemd-notify', [state], { stdio: 'ignore' });
  child.on('error', () => {});
  child.unref();
}

// WatchdogSec=: ping from READY=1 to STOPPING=1, and only while the event loop turns and the database answers.
let watchdog: Watchdog | null = null;
function notifyAndWatch(state: string): void {
  notify(state);
  if (state === 'READY=1' && !watchdog) {
    const intervalMs = watchdogIntervalMs(process.env, process.pid);
    const dbPath = intervalMs === null ? null : watchdogDatabasePath(process.argv.slice(2), process.env);
    if (intervalMs !== null && dbPath !== null) {
      const database = databaseProbe(dbPath);
      const running = startWatchdog({
        intervalMs,
        probe: database.probe,
        notify,
        // journald keeps this line: it says why systemd is about to restart the service.
        onUnhealthy: (err) =>
          process.stderr.write(`vendgate: watchdog: not pinging systemd: ${err instanceof Error ? err.message : String(err)}\n`),
      });
      watchdog = {
        stop() {
          running.stop();
          database.close();
        },
      };
    }
  }
  if (state === 'STOPPING=1') watchdog?.stop();
}

const stopSignal = new Promise<string>((resolve) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve(signal));
});

// Crash tests name a point at which the process kills itself; never set outside tests.
const crashAt = process.env.VENDGATE_CRASH_AT;
const crashPoint = crashAt
  ? (name: string) => {
      if (name === crashAt) process.kill(process.pid, 'SIGKILL');
    }
  : undefined;

process.on('unhandledRejection', (reason) => {
  process.stderr.write(`vendgate: unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}\n`);
  process.exit(EXIT.FAILURE);
});

const code = await runCli(
  process.argv.slice(2),
  {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    stopSignal,
    notify: notifyAndWatch,
    isTty: Boolean(process.stderr.isTTY),
  },
  { crashPoint },
);
process.exit(code);
