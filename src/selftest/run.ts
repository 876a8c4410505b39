import { publishSelftestResult } from '../mqtt/index.js';
import type { Settings, SettingsError } from '../settings/index.js';
import { systemClock } from '../util/clock.js';
import { silentLogger } from '../util/logger.js';
import type { CheckResult, SelftestDeps, SelftestOptions, SelftestReport } from './types.js';
import { bounded, defaultExec, describeError, fail, pass } from './helpers.js';
import { detectService, localListenerCheck, webhookListenerCheck } from './checks/listeners.js';
import { checkDatabase, checkDisk, checkStorage } from './checks/database.js';
import { checkPending } from './checks/pending.js';
import { checkSlots } from './checks/slots.js';
import { checkClock, checkProvider, type ProviderCheck } from './checks/provider.js';
import { checkTunnel } from './checks/tunnel.js';
import { checkTunnelIngress } from './checks/tunnel-ingress.js';
import { checkMqtt } from './checks/mqtt.js';
import { checkHardwareLines } from './checks/hardware.js';
import { checkFiscal } from './checks/fiscal.js';
import { createRegister } from '../fiscal/index.js';
import { storeSelftestResult } from './result-store.js';
import { runningServiceOf } from './service-record.js';

export const SELFTEST_REPORT_VERSION = 1;
const DEFAULT_CHECK_TIMEOUT_MS = 5_000;

export interface SelftestRun {
  report: SelftestReport;
  /** Whether the service answered (or systemd has it active), and how that was found out. */
  service: { running: boolean; how: string };
  /** What happened to the result (stored, published), for the footer. Not part of the report. */
  notes: string[];
}

/**
 * Runs every check against the components the service itself would build from these settings.
 * Checks that do not depend on each other run at the same time; each has an upper bound, so the
 * whole run stays within seconds even when a host does not answer. Never throws.
 */
export async function runSelftest(
  options: SelftestOptions & { store?: boolean; publish?: boolean },
  deps: SelftestDeps = {},
): Promise<SelftestRun> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger();
  const fetchFn = deps.fetch ?? globalThis.fetch;
  const exec = deps.exec ?? defaultExec;
  const notes: string[] = [];
  const { settings, urls } = followTheService(options, deps, notes);
  const timeoutMs = options.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  const startedAt = clock.now();
  const t0 = Date.now();

  const env = options.environment.length ? options.environment.join(', ') : 'none';
  const settingsLine = pass(
    'settings',
    `${options.source} (environment: ${env}); device ${settings.device.id} (${settings.device.mode}, ${settings.device.livemode ? 'live' : 'test'}), provider ${settings.provider.name}, actuator ${settings.actuator.kind}`,
  );

  const service = await detectService(
    settings,
    { fetch: fetchFn, exec },
    {
      urls,
      inProcess: deps.live !== undefined,
      expectService: options.expectService ?? false,
      probeTimeoutMs: options.probeTimeoutMs,
    },
  );
  // A stopped device is looked at, not written to: nothing stored or published unless asked.
  const quiet = !service.running && !options.record && deps.live === undefined;
  // Synchronous and first: the tunnel and pending checks read the database.
  const database = checkDatabase(settings, deps.live?.db, { readonly: quiet });
  try {
    const providerHint = 'check the network and provider.baseUrl';
    let providerCheck: ProviderCheck | null = null;
    let mqttReachable = false;
    const hardwareBudget =
      Math.max(timeoutMs, settings.actuator.serial.timeoutMs + 3_000) + (options.actuate ? settings.actuator.vendTimeoutMs : 0);
    const [disk, providerAndClock, tunnel, mqtt, hardware, fiscal] = await Promise.all([
      bounded('disk', timeoutMs, 'df -h', () => checkDisk(settings)),
      (async () => {
        const provider = await bounded('provider', timeoutMs + 3_000, providerHint, async () => {
          providerCheck = await checkProvider(settings, {
            clock,
            logger,
            fetch: deps.fetch,
            provider: deps.provider ?? deps.live?.provider,
          });
          return providerCheck.result;
        });
        const clockLine = await bounded('clock', timeoutMs, 'timedatectl status', () => {
          const checked = providerCheck as ProviderCheck | null;
          return checkClock(settings, { clock, exec }, checked?.serverDate, checked?.result.status === 'PASS');
        });
        return [...clockLine, ...provider];
      })(),
      bounded('webhook.tunnel', timeoutMs * 3, 'systemctl status vendgate-tunnel', async () => {
        const ingress = await checkTunnelIngress(settings, { exec, configPath: deps.tunnelConfigPath }, timeoutMs);
        const line = await checkTunnel(settings, { fetch: fetchFn, db: database.db, now: () => clock.now() }, service, timeoutMs);
        return [ingress, line].filter((l): l is CheckResult => l !== null);
      }),
      bounded('mqtt', timeoutMs + 1_000, 'check mqtt.url', async () => {
        const checked = await checkMqtt(settings, service, { deviceId: settings.device.id, timeoutMs, db: database.db });
        mqttReachable = checked.reachable;
        return checked.result;
      }),
      bounded('hardware', hardwareBudget, 'check the wiring', () =>
        checkHardwareLines(settings, { clock, logger, hardware: deps.hardware, live: deps.live }, service, options.actuate ?? false),
      ),
      bounded('fiscal', timeoutMs + 1_000, 'check the fiscal register', async () => {
        // Outside the service a real register is built from the settings (and closed); the sandbox lives in the service.
        const own =
          deps.live || settings.fiscal.register === 'sandbox' ? null : await createRegister(settings, { clock, logger }).catch(() => null);
        try {
          return await checkFiscal(settings, { db: database.db, now: clock.now(), register: deps.live?.fiscal ?? own });
        } finally {
          await own?.close?.();
        }
      }),
    ]);
    const pending = (() => {
      try {
        return [...checkPending(database.db, settings, clock.now(), database.exists), ...checkSlots(database.db)];
      } catch (err) {
        return [fail('pending', `could not read the queues: ${describeError(err)}`, 'see the database line')];
      }
    })();

    const checks: CheckResult[] = [
      settingsLine,
      database.result,
      ...(deps.live?.storage ? [checkStorage(deps.live.storage)] : []),
      ...disk,
      ...providerAndClock,
      webhookListenerCheck(service),
      ...tunnel,
      localListenerCheck(service),
      ...mqtt,
      ...hardware,
      ...fiscal,
      ...pending,
    ];
    const report: SelftestReport = {
      version: SELFTEST_REPORT_VERSION,
      ok: checks.every((c) => c.status !== 'FAIL'),
      startedAt: new Date(startedAt).toISOString(),
      durationMs: Date.now() - t0,
      config: { source: options.source, environment: [...options.environment], deviceId: settings.device.id },
      checks,
    };

    if (quiet) {
      notes.push('nothing stored or published: the service is not running (--record stores and publishes the result anyway)');
    } else if (options.store !== false) {
      if (database.db) {
        try {
          storeSelftestResult(database.db, report);
          notes.push('result stored in the database (meta.selftest_last)');
        } catch (err) {
          notes.push(`result not stored: ${describeError(err)}`);
        }
      } else {
        notes.push('result not stored: the database is not available');
      }
    }
    // Inside the service its own MQTT connection publishes the report (Mqtt.publishSelftest).
    if (!quiet && (options.publish ?? deps.live === undefined) && mqttReachable) {
      const published = await publishSelftestResult(settings.mqtt, {
        deviceId: settings.device.id,
        timeoutMs,
        report,
        at: report.startedAt,
      });
      notes.push(published.detail);
    }
    return { report, notes, service: { running: service.running, how: service.how } };
  } finally {
    database.close();
  }
}

/**
 * Beside a running service (the CLI without port options), its own listeners and embedded broker,
 * which it noted in its database at start: it may run with --local-port or --broker-port, and
 * whatever answers on the file's ports may be another program.
 */
function followTheService(
  options: SelftestOptions,
  deps: SelftestDeps,
  notes: string[],
): { settings: Readonly<Settings>; urls: SelftestOptions['urls'] } {
  const { settings } = options;
  if (!options.followService || deps.live || options.urls) return { settings, urls: options.urls };
  const running = runningServiceOf(settings.storage.path);
  if (!running) return { settings, urls: undefined };
  const brokerPort = settings.mqtt.url === 'embedded' ? running.brokerPort : null;
  notes.push(
    `checked the running service (pid ${running.pid}) where it listens: ${running.local}, ${running.webhook}${brokerPort !== null ? `, broker port ${brokerPort}` : ''}`,
  );
  const followed =
    brokerPort !== null && brokerPort !== settings.mqtt.embeddedPort
      ? Object.freeze({ ...settings, mqtt: Object.freeze({ ...settings.mqtt, embeddedPort: brokerPort }) })
      : settings;
  return { settings: followed, urls: { local: running.local, webhook: running.webhook } };
}

/** The report for settings that do not load: one FAIL line listing every problem. */
export function settingsFailureReport(err: SettingsError, startedAtMs: number, durationMs: number): SelftestReport {
  const problems = err.problems.join('; ');
  return {
    version: SELFTEST_REPORT_VERSION,
    ok: false,
    startedAt: new Date(startedAtMs).toISOString(),
    durationMs,
    config: { source: err.source, environment: [], deviceId: null },
    checks: [
      fail(
        'settings',
        `${err.source}: ${problems}`,
        'fix the listed keys (docs/configuration.md, "Every key", describes each); the service would exit with code 78 on this file',
      ),
    ],
  };
}
