import type { Settings } from '../settings/index.js';
import type { Db, StorageHealth } from '../store/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { PaymentProvider } from '../payments/index.js';
import type { Actuator, HardwareDeps, HardwareInputs } from '../hardware/index.js';
import type { FiscalRegister } from '../fiscal/index.js';

export type CheckStatus = 'PASS' | 'WARN' | 'FAIL';

/** One line of the report. `name` is stable (scripts match on it); `hint` is '' when there is nothing to do. */
export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  hint: string;
}

/** The `--json` document. Version 1: fields are only ever added, never renamed or removed. */
export interface SelftestReport {
  version: 1;
  /** True when no check FAILed. */
  ok: boolean;
  startedAt: string;
  durationMs: number;
  config: {
    /** The settings file that was read. */
    source: string;
    /** Names (never values) of the environment variables that contributed. */
    environment: string[];
    deviceId: string | null;
  };
  checks: CheckResult[];
}

/** Runs a command with a time limit (timedatectl, systemctl). Never throws: a missing binary is `code: null`. */
export type Exec = (command: string, args: string[], timeoutMs: number) => Promise<{ code: number | null; stdout: string; error?: string }>;

/** The components of a running service, when the selftest runs inside it (MQTT cmd/selftest). */
export interface LiveComponents {
  db: Db;
  provider: PaymentProvider;
  actuator: Actuator;
  inputs: HardwareInputs;
  /** The service's fiscal register (absent with `fiscal.register: none`). */
  fiscal?: FiscalRegister;
  /** The card beneath the database as the service sees it: the `storage` line names a fault in force. */
  storage?: Pick<StorageHealth, 'fault' | 'describe'>;
}

export interface SelftestDeps {
  clock?: Clock;
  logger?: Logger;
  /** Inside the service: use its components instead of building (and locking) a second set. */
  live?: LiveComponents;
  /** Replaces the provider the settings name (tests). */
  provider?: PaymentProvider;
  /** Passed to createActuator/createInputs (tests: fake Gpio, serial mock binding, sysfs fixture). */
  hardware?: Omit<HardwareDeps, 'clock' | 'logger'>;
  fetch?: typeof fetch;
  exec?: Exec;
  /** The cloudflared configuration the tunnel.ingress line checks [/etc/vendgate/cloudflared.yml]. */
  tunnelConfigPath?: string;
}

export interface SelftestOptions {
  settings: Readonly<Settings>;
  source: string;
  environment: string[];
  /** The person confirmed a test actuation (the CLI asks; never set without asking). */
  actuate?: boolean;
  /** A stopped service is a FAIL, not a WARN (install and update scripts, after starting it). */
  expectService?: boolean;
  /**
   * Store the result in the database and publish it over MQTT even though the service is not
   * running. Without it a selftest of a stopped device writes and publishes nothing: the database is
   * opened read-only and the report describes no running device, so it must not look like one.
   */
  record?: boolean;
  /**
   * Where the listeners really are, when the caller knows better than the settings (the service
   * itself with port 0, tests). Base URLs without a trailing slash.
   */
  urls?: { local?: string; webhook?: string };
  /**
   * Check the service that runs on this database where it really listens (its note in the
   * database), not where the settings say. The CLI sets it when no port option was given.
   */
  followService?: boolean;
  /** Upper bound of one network check. Default 5000 ms. */
  checkTimeoutMs?: number;
  /**
   * Upper bound of each probe of the service's own listeners. Default 1500 ms: a listener on this
   * machine that takes longer is not healthy. Tests raise it: a port nobody listens on is refused at
   * once, and a loaded CI machine must not turn that into "no answer".
   */
  probeTimeoutMs?: number;
}
