import { resolve } from 'node:path';
import { intIn } from '../sections/number.js';
import * as z from 'zod';
import { withCredentials } from '../credentials.js';
import { mqttSchema } from '../sections/mqtt.js';
import { logSchema } from '../sections/service.js';
import { deepFreeze, readSettingsFile, SettingsError, SECRET_ENV } from '../load.js';
import { findUnknownKeys, withoutKeys } from '../unknown-keys.js';
import { WEBHOOK_LISTENER_DEFAULTS } from '../../util/http-listener.js';

/** `vendgate relay` reads this file when --config and VENDGATE_RELAY_CONFIG name none. */
export const RELAY_CONFIG_PATH = '/etc/vendgate/relay.yaml';

/** Secrets of the relay, from the environment or its systemd credential relay-secrets.env (/etc/vendgate/relay-secrets.env), never the file. */
export const RELAY_SECRET_ENV = {
  /** Webhook secrets for every provider route (comma-separated, all accepted: rotation). */
  webhookSecrets: SECRET_ENV.webhookSecrets,
  /** Per provider, instead of the shared list: VENDGATE_WEBHOOK_SECRETS_GEREGE, …_QUTPAY. */
  providerWebhookSecrets: (provider: string) => `${SECRET_ENV.webhookSecrets}_${provider.toUpperCase()}`,
  /** The read-only Gerege key (scope payments:read) used to route refund events. */
  lookupClientSecret: 'VENDGATE_RELAY_LOOKUP_CLIENT_SECRET',
  mqttPassword: SECRET_ENV.mqttPassword,
  /** Kaspi's easy scheme: the API key Kaspi issued (the strong scheme uses relay.kaspi.certFile/keyFile instead). */
  kaspiApiKey: 'VENDGATE_RELAY_KASPI_API_KEY',
} as const;

/**
 * `relay.kaspi`: the Kaspi QR caller. Kaspi takes calls only from whitelisted addresses with a client
 * certificate, so devices call it through here; see docs/providers.md, "Kaspi QR".
 */
export const relayKaspiSchema = () =>
  z
    .object({
      enabled: z.boolean().default(false),
      /** The devices' listener: its own port and limits, apart from the webhook listener. */
      host: z.string().min(1).default('0.0.0.0'),
      port: intIn(0, 65_535, 8789),
      bodyLimitBytes: intIn(256, 65_536, 4_096),
      headersTimeoutMs: intIn(500, 120_000, WEBHOOK_LISTENER_DEFAULTS.headersTimeoutMs),
      requestTimeoutMs: intIn(1_000, 300_000, 30_000),
      idleTimeoutMs: intIn(1_000, 600_000, 35_000),
      keepAliveTimeoutMs: intIn(100, 120_000, WEBHOOK_LISTENER_DEFAULTS.keepAliveTimeoutMs),
      maxRequestsPerSocket: intIn(0, 1_000_000, WEBHOOK_LISTENER_DEFAULTS.maxRequestsPerSocket),
      maxConnections: intIn(1, 100_000, 1_024),
      /** Calls one device may make per minute; a QR polled every 2 s makes 30. */
      maxCallsPerDevicePerMinute: intIn(10, 100_000, 120),
      /** How old a device's signed request may be. */
      toleranceSec: intIn(5, 3_600, 300),
      /** Kaspi's merchant API, e.g. https://qrapi-cert-ip.kaspi.kz (paths /r3/v01/... are added). */
      baseUrl: z.url({ protocol: /^https?$/ }).optional(),
      /** strong: client certificate (mTLS); easy: Api-Key. Both only from the whitelisted address of this server. */
      scheme: z.enum(['strong', 'easy']).default('strong'),
      /** PEM files of the client certificate Kaspi issued, its key, and (optional) the CA Kaspi's server certificate is checked against. */
      certFile: z.string().min(1).optional(),
      keyFile: z.string().min(1).optional(),
      caFile: z.string().min(1).optional(),
      /** The merchant's BIN (12 digits): remote/cancel names it. */
      organizationBin: z
        .string()
        .regex(/^\d{12}$/, '12 digits')
        .optional(),
      /** True only against Kaspi's production API: answers to devices say so. */
      livemode: z.boolean().default(false),
      /** Device id → Kaspi device token and the device's relay secrets (JSON, chmod 600). */
      devicesFile: z.string().min(1).default('/etc/vendgate/kaspi-devices.json'),
      /** The journal every create and return is written to before Kaspi is called (SQLite). */
      journalPath: z.string().min(1).default('/var/lib/vendgate-relay/kaspi.db'),
      /** One call to Kaspi. */
      kaspiTimeoutMs: intIn(500, 60_000, 10_000),
      /** Filled from VENDGATE_RELAY_KASPI_API_KEY (easy scheme); never from the file. */
      apiKey: z.string().min(1).optional(),
    })
    .superRefine((kaspi, ctx) => {
      if (!kaspi.enabled) return;
      if (!kaspi.baseUrl)
        ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: "required with kaspi.enabled: Kaspi's merchant API URL" });
      if (!kaspi.organizationBin)
        ctx.addIssue({ code: 'custom', path: ['organizationBin'], message: "required with kaspi.enabled: the merchant's BIN" });
      if (kaspi.scheme === 'strong' && (!kaspi.certFile || !kaspi.keyFile))
        ctx.addIssue({
          code: 'custom',
          path: ['certFile'],
          message: 'the strong scheme needs certFile and keyFile (the client certificate Kaspi issued)',
        });
      if (kaspi.scheme === 'easy' && !kaspi.apiKey)
        ctx.addIssue({ code: 'custom', path: ['apiKey'], message: `the easy scheme needs ${RELAY_SECRET_ENV.kaspiApiKey}` });
    });

/**
 * The providers whose webhooks the relay can serve: exactly those with a row in payments/webhooks.ts
 * (`PROVIDER_WEBHOOKS`; a test holds the two equal). A provider without webhooks (polling only) is absent.
 */
export const RELAY_PROVIDERS = ['gerege', 'qutpay', 'qpay'] as const;
/** Those whose callbacks are unsigned hints (`signed: false` in PROVIDER_WEBHOOKS): no webhook secret. */
export const RELAY_UNSIGNED_PROVIDERS: readonly string[] = ['qpay'];

export const relaySectionSchema = () =>
  z
    .object({
      /** Names this replica's MQTT client (`<prefix>_relay_<id>`); unique per replica. Default: host name and pid. */
      id: z
        .string()
        .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lower-case letters, digits and - only')
        .optional(),
      /** The fleet URL's tunnel or load balancer connects here. */
      host: z.string().min(1).default('0.0.0.0'),
      port: intIn(0, 65_535, 8788),
      bodyLimitBytes: intIn(1_024, 1_048_576, 65_536),
      /** The internet-facing listener's limits: those of a device's webhook listener (http.webhook). */
      headersTimeoutMs: intIn(500, 120_000, WEBHOOK_LISTENER_DEFAULTS.headersTimeoutMs),
      requestTimeoutMs: intIn(1_000, 300_000, WEBHOOK_LISTENER_DEFAULTS.requestTimeoutMs),
      idleTimeoutMs: intIn(1_000, 600_000, WEBHOOK_LISTENER_DEFAULTS.idleTimeoutMs),
      keepAliveTimeoutMs: intIn(100, 120_000, WEBHOOK_LISTENER_DEFAULTS.keepAliveTimeoutMs),
      maxRequestsPerSocket: intIn(0, 1_000_000, WEBHOOK_LISTENER_DEFAULTS.maxRequestsPerSocket),
      /** Open connections at most; beyond it the most suspicious one (a slow sender first) is pushed out. */
      maxConnections: intIn(1, 100_000, WEBHOOK_LISTENER_DEFAULTS.maxConnections),
      /**
       * One route `POST /webhooks/<provider>` each. Empty (`[]`) only with `kaspi.enabled`: a relay that
       * only calls Kaspi for devices has no webhook listener and no broker connection.
       */
      providers: z.array(z.enum(RELAY_PROVIDERS)).default(['gerege']),
      /** Gerege signature timestamp tolerance (the device checks it again with its own). */
      toleranceSec: intIn(1, 3_600, 300),
      /** No PUBACK from the broker within this → 503, and the provider retries. */
      publishTimeoutMs: intIn(100, 60_000, 5_000),
      /**
       * An event for an unknown reference gets 503 (the provider retries) instead of 202 until the
       * relay has read every retained route the broker held (its backlog marker came back), and this
       * long more after the first time (0: no grace).
       */
      routesWarmupSec: intIn(0, 600, 0),
      /** Counters are logged this often (and at stop). */
      statsIntervalSec: intIn(1, 86_400, 60),
      /** Routing refund events: the relay never moves money, so a read-only key is enough. */
      routeLookup: z
        .object({
          /** Gerege API base URL, for refund events (`re_…`) whose body carries no order reference. */
          baseUrl: z.url({ protocol: /^https?$/ }).optional(),
          clientId: z.string().min(1).optional(),
          clientSecret: z.string().min(1).optional(),
          /** The OAuth2 scope the lookup key asks for: it only reads payments. */
          scope: z.string().min(1).default('payments:read'),
          requestTimeoutMs: intIn(100, 60_000, 3_000),
          /** Payment intent → device answers kept (an intent's reference never changes). */
          cacheSize: intIn(10, 10_000_000, 100_000),
        })
        .prefault({}),
      kaspi: relayKaspiSchema().prefault({}),
      /** Filled from the environment by loadRelaySettings (the file may not hold secrets). */
      webhookSecrets: z.record(z.string(), z.array(z.string().min(1))).default({}),
    })
    .superRefine((relay, ctx) => {
      for (const provider of relay.providers) {
        if (!RELAY_UNSIGNED_PROVIDERS.includes(provider) && !relay.webhookSecrets[provider]?.length) {
          ctx.addIssue({
            code: 'custom',
            path: ['webhookSecrets', provider],
            message: `required: set ${RELAY_SECRET_ENV.providerWebhookSecrets(provider)} or ${RELAY_SECRET_ENV.webhookSecrets} (comma-separated)`,
          });
        }
      }
      const lookup = relay.routeLookup;
      const any = lookup.baseUrl ?? lookup.clientId ?? lookup.clientSecret;
      if (any !== undefined && !(lookup.baseUrl && lookup.clientId && lookup.clientSecret)) {
        ctx.addIssue({
          code: 'custom',
          path: ['routeLookup'],
          message: `baseUrl, clientId and the secret (${RELAY_SECRET_ENV.lookupClientSecret}) go together`,
        });
      }
    });

export const relaySettingsSchema = () =>
  z
    .object({
      relay: relaySectionSchema().prefault({}),
      // Whether the broker is needed depends on relay.providers: checked in parseRelaySettings (servingProblems).
      mqtt: mqttSchema().prefault({}),
      log: logSchema().prefault({}),
    })
    .strict();

export type RelaySettings = z.infer<ReturnType<typeof relaySettingsSchema>>;

export function resolveRelayConfigPath(cliPath: string | undefined, env: NodeJS.ProcessEnv): string {
  if (cliPath) return resolve(cliPath);
  if (env.VENDGATE_RELAY_CONFIG) return resolve(env.VENDGATE_RELAY_CONFIG);
  return RELAY_CONFIG_PATH;
}

/** Reads the relay's file, adds its secrets from the environment, validates; every problem at once. */
export function loadRelaySettings(options: { path?: string; env?: NodeJS.ProcessEnv } = {}): {
  settings: Readonly<RelaySettings>;
  source: string;
  environment: string[];
} {
  const { env } = withCredentials(options.env ?? process.env, 'relay-secrets.env');
  const source = resolveRelayConfigPath(options.path, env);
  const raw = structuredClone(readSettingsFile(source, 'relay, mqtt, log'));
  const relay = (raw.relay ??= {}) as Record<string, any>;
  const mqtt = (raw.mqtt ??= {}) as Record<string, unknown>;
  if (
    relay.webhookSecrets !== undefined ||
    relay.routeLookup?.clientSecret !== undefined ||
    relay.kaspi?.apiKey !== undefined ||
    mqtt.password !== undefined
  ) {
    throw new SettingsError(source, [
      'secrets are not read from the file: set them in the environment (VENDGATE_WEBHOOK_SECRETS[_<PROVIDER>], VENDGATE_RELAY_LOOKUP_CLIENT_SECRET, VENDGATE_RELAY_KASPI_API_KEY, VENDGATE_MQTT_PASSWORD)',
    ]);
  }
  const environment: string[] = [];
  const split = (value: string) =>
    value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const providers = Array.isArray(relay.providers) ? (relay.providers as unknown[]) : ['gerege'];
  const secrets: Record<string, string[]> = {};
  for (const provider of providers) {
    if (typeof provider !== 'string') continue;
    const own = RELAY_SECRET_ENV.providerWebhookSecrets(provider);
    const name = env[own] ? own : env[RELAY_SECRET_ENV.webhookSecrets] ? RELAY_SECRET_ENV.webhookSecrets : null;
    if (name) {
      secrets[provider] = split(env[name]!);
      if (!environment.includes(name)) environment.push(name);
    }
  }
  relay.webhookSecrets = secrets;
  if (env[RELAY_SECRET_ENV.lookupClientSecret]) {
    relay.routeLookup = { ...(relay.routeLookup ?? {}), clientSecret: env[RELAY_SECRET_ENV.lookupClientSecret] };
    environment.push(RELAY_SECRET_ENV.lookupClientSecret);
  }
  if (env[RELAY_SECRET_ENV.kaspiApiKey]) {
    relay.kaspi = { ...(relay.kaspi ?? {}), apiKey: env[RELAY_SECRET_ENV.kaspiApiKey] };
    environment.push(RELAY_SECRET_ENV.kaspiApiKey);
  }
  if (env[RELAY_SECRET_ENV.mqttPassword]) {
    mqtt.password = env[RELAY_SECRET_ENV.mqttPassword];
    environment.push(RELAY_SECRET_ENV.mqttPassword);
  }
  return { settings: parseRelaySettings(raw, source), source, environment };
}

export function parseRelaySettings(input: unknown, source = '(in memory)'): Readonly<RelaySettings> {
  // As for a device: a typo is an error with a suggestion, never a key zod silently drops.
  const problems: string[] = [];
  const schema = relaySettingsSchema(); // built for this check and dropped after it, like a device's (settings/schema.ts)
  let checked = input;
  if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const unknown = findUnknownKeys(schema, input);
    for (const { path, suggestion } of unknown)
      problems.push(`${path}: unknown key;${suggestion === null ? '' : ` did you mean "${suggestion}"?`}`);
    checked = withoutKeys(input as Record<string, unknown>, unknown);
  }
  problems.push(...servingProblems(checked));
  const result = schema.safeParse(checked, { jitless: true }); // once per start: see settings/load.ts
  if (!result.success)
    problems.push(...result.error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(top level)'}: ${issue.message}`));
  if (problems.length > 0 || !result.success) throw new SettingsError(source, problems);
  return deepFreeze(result.data);
}

/**
 * What the relay serves decides what it needs, across sections (so read from the input, and listed
 * beside every other problem): webhook providers need the fleet's broker (the relay publishes each
 * webhook to its device); a Kaspi-only relay (`providers: []`, `kaspi.enabled`) needs none; a relay
 * serving neither is refused.
 */
function servingProblems(input: unknown): string[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return [];
  const { relay, mqtt } = input as { relay?: unknown; mqtt?: unknown };
  const section = relay !== null && typeof relay === 'object' ? (relay as { providers?: unknown; kaspi?: { enabled?: unknown } }) : {};
  // Absent: the default, ['gerege'].
  const webhooks = !Array.isArray(section.providers) || section.providers.length > 0;
  if (!webhooks) {
    return section.kaspi?.enabled === true
      ? []
      : [
          'relay.providers: empty and relay.kaspi.enabled is not true: this relay would serve nothing (list a webhook provider, or enable the Kaspi caller)',
        ];
  }
  const broker = mqttSchema().safeParse(mqtt ?? {});
  if (broker.success && (broker.data.url === '' || broker.data.url === 'embedded'))
    return ["mqtt.url: the relay publishes to the fleet's broker: give its URL (mqtt://host:1883 or mqtts://host:8883)"];
  return [];
}
