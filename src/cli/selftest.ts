import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { loadSettings, SettingsError, type LoadedSettings, type PortOverrides } from '../settings/index.js';
import {
  runSelftest,
  settingsFailureReport,
  formatReport,
  formatReportJson,
  describeActuation,
  type SelftestDeps,
} from '../selftest/index.js';
import { type CliIo, EXIT, print } from './io.js';

export interface SelftestCommandOptions {
  config?: string;
  json?: boolean;
  actuate?: boolean;
  /** Confirms --actuate without asking (scripts); never implies --actuate. */
  yes?: boolean;
  /** A stopped service is a FAIL (install and update scripts run it after starting the service). */
  expectService?: boolean;
  /** Store and publish the result even when the service is not running. */
  record?: boolean;
  /** The same port options as `start`; without any, the running service's own ports are checked. */
  ports?: PortOverrides;
}

/** The terminal the confirmation is read from; process.stdin unless a test gives another. */
export type ConfirmInput = NodeJS.ReadableStream & { isTTY?: boolean };

/**
 * `vendgate selftest [--config FILE] [--local-port N …] [--json] [--actuate [--yes]] [--expect-service]`. Exit 0 only
 * when nothing FAILs; 78 when the settings do not load; 64 when --actuate cannot be confirmed.
 */
export async function selftestCommand(
  options: SelftestCommandOptions,
  io: CliIo & { stdin?: ConfirmInput },
  deps: SelftestDeps = {},
): Promise<number> {
  const t0 = Date.now();
  let loaded: LoadedSettings;
  try {
    loaded = loadSettings({ path: options.config, env: io.env, ports: options.ports });
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    const report = settingsFailureReport(err, t0, Date.now() - t0);
    print(io.stdout, options.json ? formatReportJson(report) : formatReport(report, { color: isTty(io.stdout) }));
    return EXIT.CONFIG;
  }
  const { settings } = loaded;
  const notes: string[] = [];
  const dropped = dropToDatabaseOwner(settings.storage.path);
  if (dropped) notes.push(dropped);

  let actuate = false;
  if (options.actuate) {
    const what = describeActuation(settings);
    if (options.yes) {
      actuate = true;
    } else {
      const stdin = io.stdin ?? process.stdin;
      if (!stdin.isTTY) {
        print(
          io.stderr,
          `vendgate: --actuate moves hardware (${what}); stdin is not a terminal, so nobody can confirm. Add --yes to confirm from a script.`,
        );
        return EXIT.USAGE;
      }
      actuate = await confirm(stdin, io.stderr, `--actuate will send ${what}.\nMake sure nobody is in the way. Type yes to go ahead: `);
      if (!actuate) notes.push('--actuate not confirmed: nothing was moved');
    }
  }

  const run = await runSelftest(
    {
      settings,
      source: loaded.source,
      environment: loaded.environment,
      actuate,
      expectService: options.expectService ?? false,
      record: options.record ?? false,
      followService: !Object.values(options.ports ?? {}).some((port) => port !== undefined),
    },
    deps,
  );
  notes.push(...run.notes);
  // First, before the table: a stopped service changes what every line below means.
  if (!run.service.running) print(options.json ? io.stderr : io.stdout, `${SERVICE_STOPPED} ${options.record ? RECORDED : NOT_RECORDED}`);
  if (options.json) {
    print(io.stdout, formatReportJson(run.report));
    for (const note of notes) print(io.stderr, note);
  } else {
    print(io.stdout, formatReport(run.report, { color: isTty(io.stdout), notes }));
  }
  return run.report.ok ? EXIT.OK : EXIT.FAILURE;
}

const SERVICE_STOPPED =
  'The service is not running (nothing answered on its listeners, and systemd has no active vendgate): the lines below check the settings, the database, the disk, the provider and the hardware as they are, not a working device. Start it with: sudo systemctl start vendgate (npm start in a checkout).';
const NOT_RECORDED = 'Nothing was stored or published (--record does).';
const RECORDED = 'The result is stored and published anyway (--record).';

function isTty(stream: NodeJS.WritableStream): boolean {
  return Boolean((stream as { isTTY?: boolean }).isTTY);
}

function confirm(input: ConfirmInput, output: NodeJS.WritableStream, question: string): Promise<boolean> {
  return new Promise((resolveAnswer) => {
    const rl = createInterface({ input, output, terminal: false });
    let answered = false;
    rl.question(question, (answer) => {
      answered = true;
      rl.close();
      resolveAnswer(answer.trim().toLowerCase() === 'yes');
    });
    rl.on('close', () => {
      if (!answered) resolveAnswer(false);
    });
  });
}

/**
 * Run as root (sudo), the selftest would create the database's -wal/-shm files, the sandbox file
 * or the sim log as root, and the service (user vendgate) could no longer write them. So it becomes
 * the owner of the database directory first, with that user's groups (gpio, dialout), which is
 * also who the service runs as.
 */
export function dropToDatabaseOwner(storagePath: string): string | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const path = resolve(storagePath);
  const target = existsSync(path) ? path : existsSync(dirname(path)) ? dirname(path) : null;
  if (!target) return null;
  const { uid, gid } = statSync(target);
  if (uid === 0) return null;
  try {
    (process as unknown as { initgroups(user: number, group: number): void }).initgroups(uid, gid);
  } catch {
    // No passwd entry for the uid: keep going with the primary group only.
  }
  process.setgid!(gid);
  process.setuid!(uid);
  return `ran as uid ${uid} (the owner of ${target}), not root, so the service can still write every file`;
}
