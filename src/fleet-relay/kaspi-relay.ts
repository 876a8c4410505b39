/**
 * The fleet relay's Kaspi caller, assembled: the devices file, the journal, the mTLS (or API key)
 * access to Kaspi and the device listener. Started by `vendgate relay` when `relay.kaspi.enabled`,
 * and in process by the demo (`vendgate start --provider kaspi`).
 */
import { readFileSync, statSync } from 'node:fs';
import * as z from 'zod';
import type { Logger } from '../util/logger.js';
import type { RelaySettings } from '../settings/fleet-relay/index.js';
import type { KaspiAccess } from './kaspi-client.js';
import { openKaspiJournal } from './kaspi-journal.js';
import { createKaspiCaller } from './kaspi-caller.js';
import { createKaspiCounters, createKaspiServer, type KaspiDevice, type KaspiServerSettings } from './kaspi-server.js';

export interface KaspiRelayOptions extends KaspiServerSettings {
  baseUrl: string;
  organizationBin: string;
  livemode: boolean;
  journalPath: string;
  /** One call to Kaspi (the listener's own requestTimeoutMs is a different limit). */
  kaspiTimeoutMs: number;
  /** Strong scheme: the client certificate, its key and (optional) the CA of Kaspi's server, as PEM. */
  tls?: { cert: string | Buffer; key: string | Buffer; ca?: string | Buffer };
  /** Easy scheme. */
  apiKey?: string;
  devices: ReadonlyMap<string, KaspiDevice>;
}

const devicesFileSchema = z.strictObject({
  devices: z.record(
    z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/),
    z.strictObject({ deviceToken: z.string().min(1), secrets: z.array(z.string().min(16, 'at least 16 characters')).min(1) }),
  ),
});

/**
 * The devices file: `{ "devices": { "<device id>": { "deviceToken", "secrets": [...] } } }`. It holds
 * secrets, so it must not be readable by group or others (chmod 600).
 */
export function readKaspiDevicesFile(path: string): Map<string, KaspiDevice> {
  const mode = statSync(path).mode;
  if ((mode & 0o077) !== 0)
    throw new Error(`relay.kaspi.devicesFile ${path}: holds device tokens and secrets; make it readable by the relay only (chmod 600)`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`relay.kaspi.devicesFile ${path}: not JSON (${(err as Error).message})`);
  }
  const result = devicesFileSchema.safeParse(parsed);
  if (!result.success)
    throw new Error(`relay.kaspi.devicesFile ${path}: ${result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return new Map(Object.entries(result.data.devices));
}

/** The Kaspi caller `relay.kaspi` describes: its files are read now (a missing one stops the relay's start). */
export function kaspiRelayOptions(kaspi: Readonly<RelaySettings['relay']['kaspi']>): KaspiRelayOptions {
  const read = (path: string | undefined) => (path ? readFileSync(path) : undefined);
  const tls =
    kaspi.scheme === 'strong' && kaspi.certFile && kaspi.keyFile
      ? { cert: readFileSync(kaspi.certFile), key: readFileSync(kaspi.keyFile), ...(kaspi.caFile ? { ca: read(kaspi.caFile) } : {}) }
      : undefined;
  return {
    host: kaspi.host,
    port: kaspi.port,
    bodyLimitBytes: kaspi.bodyLimitBytes,
    headersTimeoutMs: kaspi.headersTimeoutMs,
    requestTimeoutMs: kaspi.requestTimeoutMs,
    idleTimeoutMs: kaspi.idleTimeoutMs,
    keepAliveTimeoutMs: kaspi.keepAliveTimeoutMs,
    maxRequestsPerSocket: kaspi.maxRequestsPerSocket,
    maxConnections: kaspi.maxConnections,
    maxCallsPerDevicePerMinute: kaspi.maxCallsPerDevicePerMinute,
    toleranceSec: kaspi.toleranceSec,
    baseUrl: kaspi.baseUrl ?? '',
    organizationBin: kaspi.organizationBin ?? '',
    livemode: kaspi.livemode,
    journalPath: kaspi.journalPath,
    kaspiTimeoutMs: kaspi.kaspiTimeoutMs,
    ...(tls ? { tls } : {}),
    ...(kaspi.scheme === 'easy' && kaspi.apiKey ? { apiKey: kaspi.apiKey } : {}),
    devices: readKaspiDevicesFile(kaspi.devicesFile),
  };
}

export function createKaspiRelay(options: KaspiRelayOptions, deps: { logger: Logger; now?: () => number }) {
  const now = deps.now ?? Date.now;
  const journal = openKaspiJournal(options.journalPath, now);
  const log = deps.logger.child({ module: 'relay-kaspi' });
  if (journal.recovered.creates + journal.recovered.returns > 0)
    log.warn(journal.recovered, 'Kaspi calls a crash left unanswered are in doubt: never sent again');
  const counters = createKaspiCounters();
  const access: KaspiAccess = {
    baseUrl: options.baseUrl,
    timeoutMs: options.kaspiTimeoutMs,
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
  };
  const caller = createKaspiCaller({
    journal,
    access,
    now,
    logger: deps.logger,
    tokenOf: (deviceId) => options.devices.get(deviceId)?.deviceToken,
    organizationBin: options.organizationBin,
    livemode: options.livemode,
    onKaspiCall: (kind) => {
      counters.kaspi[kind] = (counters.kaspi[kind] ?? 0) + 1;
    },
  });
  const server = createKaspiServer({ caller, devices: options.devices, counters, logger: deps.logger, now }, options);
  let stopped = false;
  // The journal's counts as last read: the relay logs its stats once more after this caller stopped.
  let creates: Record<string, number> = {};
  return {
    start: () => server.start(),
    async stop() {
      if (stopped) return;
      creates = journal.counts();
      stopped = true;
      await server.stop();
      journal.close();
    },
    stats: () => {
      if (!stopped) creates = journal.counts();
      return { ...counters, devices: options.devices.size, creates };
    },
  };
}

export type KaspiRelay = ReturnType<typeof createKaspiRelay>;
