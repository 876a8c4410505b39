#!/usr/bin/env node
/**
 * The process: argv, signals, systemd notify, exit codes. The only file that exits.
 */
import type { Watchdog } from './selftest/index.js';
import { writeSync } from 'node:fs';
import { tierForService } from './v8-tiering.js';
import { versionLine } from './version.js';

// `vendgate --version` (also `-V`, `version`) alone: answered before anything else is loaded — no
// CLI table, no child_process, only dist/version.js (a static import: a dynamic one costs Node's
// asynchronous loader more than the file) — so it costs little more than Node itself
// (scripts/bench/cli.mjs). Anything else goes through the CLI as before.
const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V' || argv[0] === 'version')) {
  // Straight to fd 1: process.stdout would build a stream (a socket for a pipe) to write one line.
  writeSync(1, `${versionLine()}\n`);
  process.exit(0);
}
// `start`: V8's compilers set for a long-running service by the process itself, once the built-ins a
// start needs are loaded and before the service's own modules are (src/v8-tiering.ts): a V8 flag on
// node's command line would cost Node 22 the compiled code it carries for its own modules. What the
// operator gave node (its command line, and NODE_OPTIONS, which may hold --jitless) wins.
const tiering =
  argv[0] === 'start' ? tierForService([...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)]) : null;
const { runCli, EXIT } = await import('./cli/index.js');

/**
 * systemd Type=notify: Node has no Unix datagram sockets, so `systemd-notify` sends for us
 * (NotifyAccess=all). One at a time, in order: two spawned at once may arrive swapped (seen on
 * Node 24: STOPPING=1 before READY=1 when a stop followed the start closely).
 */
let notifying: Promise<void> = Promise.resolve();
function notify(state: string): void {
  if (!process.env.NOTIFY_SOCKET) return;
  notifying = notifying.then(() =>
    // child_process is loaded only under systemd (NOTIFY_SOCKET set): no other start needs it.
    import('node:child_process').then(
      ({ spawn }) =>
        new Promise<void>((resolve) => {
          const child = spawn('systemd-notify', [state], { stdio: 'ignore' });
          child.once('error', () => resolve());
          child.once('exit', () => resolve());
          child.unref();
        }),
      () => undefined,
    ),
  );
}
/** How long the process waits at exit for what it told systemd to be sent (STOPPING=1 last). */
const NOTIFY_FLUSH_MS = 2_000;

// WatchdogSec=: ping from READY=1 to STOPPING=1, and only while the event loop turns and the database answers.
let watchdog: Watchdog | null = null;
let stopped = false;
function notifyAndWatch(state: string): void {
  notify(state);
  if (state === 'READY=1') tiering?.afterReady();
  if (state === 'READY=1' && !watchdog) {
    // Loaded here, not at the top: only `start` under systemd pings a watchdog.
    void import('./selftest/watchdog.js').then(
      (module) => startWatchdogOnce(module),
      (err: unknown) => {
        process.stderr.write(`vendgate: watchdog: ${err instanceof Error ? err.message : String(err)}\n`);
      },
    );
  }
  if (state === 'STOPPING=1') {
    stopped = true;
    watchdog?.stop();
  }
}

function startWatchdogOnce({
  startWatchdog,
  watchdogIntervalMs,
  watchdogDatabasePath,
  databaseProbe,
}: typeof import('./selftest/watchdog.js')): void {
  if (watchdog || stopped) return;
  const intervalMs = watchdogIntervalMs(process.env, process.pid);
  const dbPath = intervalMs === null ? null : watchdogDatabasePath(process.argv.slice(2), process.env);
  if (intervalMs === null || dbPath === null) return;
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
    // Built at its first write: a service that starts cleanly under systemd never writes to stderr,
    // and building the stream (a socket to the journal) is a few ms of every start.
    get stderr() {
      return process.stderr;
    },
    env: process.env,
    stopSignal,
    notify: notifyAndWatch,
    // What process.stderr.isTTY says, without building the stream to ask (node:tty is loaded here,
    // not at the top: `vendgate --version` above needs neither it nor the net module under it).
    isTty: process.getBuiltinModule('node:tty').isatty(2),
  },
  { crashPoint },
);
// The timer also keeps the event loop turning while a `systemd-notify` is still running.
let flushTimer: NodeJS.Timeout | undefined;
await Promise.race([notifying, new Promise((resolve) => (flushTimer = setTimeout(resolve, NOTIFY_FLUSH_MS)))]);
clearTimeout(flushTimer);
process.exit(code);
