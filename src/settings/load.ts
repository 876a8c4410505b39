import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { settingsSchema, type Settings } from './schema.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';

/** Where the device's configuration lives when neither --config nor VENDGATE_CONFIG names one. */
export const DEVICE_CONFIG_PATH = '/etc/vendgate/config.yaml';
/** The embedded demo, shipped with the code. */
export const DEMO_CONFIG_PATH = resolve(new URL('../../config/default.yaml', import.meta.url).pathname);

/** Secrets are read from the environment only, never from the YAML file. */
export const SECRET_ENV = {
  clientSecret: 'VENDGATE_PROVIDER_CLIENT_SECRET',
  apiKey: 'VENDGATE_PROVIDER_API_KEY',
  webhookSecrets: 'VENDGATE_WEBHOOK_SECRETS',
  mqttPassword: 'VENDGATE_MQTT_PASSWORD',
} as const;

export class SettingsError extends VendgateError {
  readonly problems: string[];
  readonly source: string;

  constructor(source: string, problems: string[]) {
    super(ErrorCodes.CONFIG_INVALID, `invalid configuration in ${source}:\n  ${problems.join('\n  ')}`);
    this.name = 'SettingsError';
    this.problems = problems;
    this.source = source;
  }
}

export interface LoadedSettings {
  settings: Readonly<Settings>;
  /** The file that was read. */
  source: string;
  /** Names of the environment variables that contributed (never their values). */
  environment: string[];
}

/** Picks the file: --config, then VENDGATE_CONFIG, then /etc/vendgate/config.yaml, then the demo. */
export function resolveConfigPath(cliPath: string | undefined, env: NodeJS.ProcessEnv): string {
  if (cliPath) return resolve(cliPath);
  if (env.VENDGATE_CONFIG) return resolve(env.VENDGATE_CONFIG);
  if (existsSync(DEVICE_CONFIG_PATH)) return DEVICE_CONFIG_PATH;
  return DEMO_CONFIG_PATH;
}

/** Reads, merges and validates. Throws SettingsError listing every problem at once as `path: message`. */
export function loadSettings(options: { path?: string; env?: NodeJS.ProcessEnv } = {}): LoadedSettings {
  const env = options.env ?? process.env;
  const source = resolveConfigPath(options.path, env);
  const raw = readSettingsFile(source, 'device, provider, …');
  const { merged, environment } = mergeEnvironment(raw, env);
  return { settings: parseSettings(merged, source), source, environment };
}

/** Reads a YAML settings file into a mapping; SettingsError for a missing file, bad YAML or a non-mapping. */
export function readSettingsFile(source: string, sections: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(source, 'utf8');
  } catch (err) {
    throw new SettingsError(source, [`cannot read the file: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line})` : '';
    throw new SettingsError(source, [`not valid YAML${where}: ${(err as Error).message.split('\n')[0]}`]);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new SettingsError(source, [`the file must be a YAML mapping with the sections ${sections}`]);
  }
  return raw as Record<string, unknown>;
}

/** Validates an object already in memory (tests, the selftest). */
export function parseSettings(input: unknown, source = '(in memory)'): Readonly<Settings> {
  const result = settingsSchema.safeParse(input);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(top level)'}: ${issue.message}`);
    throw new SettingsError(source, problems);
  }
  return deepFreeze(result.data);
}

function mergeEnvironment(raw: Record<string, unknown>, env: NodeJS.ProcessEnv) {
  const merged = structuredClone(raw);
  const environment: string[] = [];
  const provider = (merged.provider ??= {}) as Record<string, unknown>;
  const mqtt = (merged.mqtt ??= {}) as Record<string, unknown>;
  for (const key of ['clientSecret', 'apiKey', 'webhookSecrets'] as const) {
    if (key in provider) {
      throw new SettingsError('(configuration file)', [`provider.${key}: secrets are not read from the file; set ${SECRET_ENV[key]} in /etc/vendgate/secrets.env`]);
    }
  }
  if (env[SECRET_ENV.clientSecret]) { provider.clientSecret = env[SECRET_ENV.clientSecret]; environment.push(SECRET_ENV.clientSecret); }
  if (env[SECRET_ENV.apiKey]) { provider.apiKey = env[SECRET_ENV.apiKey]; environment.push(SECRET_ENV.apiKey); }
  if (env[SECRET_ENV.webhookSecrets]) {
    provider.webhookSecrets = env[SECRET_ENV.webhookSecrets]!.split(',').map((s) => s.trim()).filter(Boolean);
    environment.push(SECRET_ENV.webhookSecrets);
  }
  if (env[SECRET_ENV.mqttPassword]) { mqtt.password = env[SECRET_ENV.mqttPassword]; environment.push(SECRET_ENV.mqttPassword); }
  return { merged, environment };
}

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
