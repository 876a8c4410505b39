import { readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { settingsSchema, type Settings } from './schema.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { findUnknownKeys, withoutKeys } from './unknown-keys.js';
import { withCredentials } from './credentials.js';

/** Where the device's configuration lives when neither --config nor VENDGATE_CONFIG names one. */
export const DEVICE_CONFIG_PATH = '/etc/vendgate/config.yaml';
/** The embedded demo, shipped with the code. */
export const DEMO_CONFIG_PATH = resolve(new URL('../../config/default.yaml', import.meta.url).pathname);
/** The example configurations a device starts from (config/examples/ of the release or checkout). */
const EXAMPLES_DIR = resolve(new URL('../../config/examples/', import.meta.url).pathname);

/**
 * Ports a person may move without editing a file (the demo's config is tracked): the command line's
 * flag, else the environment variable, else the file. Each is checked like the file's own value.
 */
const PORT_OVERRIDES = [
  { key: 'local', path: 'http.local.port', env: 'VENDGATE_LOCAL_PORT', flag: '--local-port' },
  { key: 'webhook', path: 'http.webhook.port', env: 'VENDGATE_WEBHOOK_PORT', flag: '--webhook-port' },
  { key: 'broker', path: 'mqtt.embeddedPort', env: 'VENDGATE_BROKER_PORT', flag: '--broker-port' },
] as const;

export type PortOverrides = Partial<Record<(typeof PORT_OVERRIDES)[number]['key'], string | undefined>>;

/**
 * Every secret, listed once: read from the environment only (systemd loads
 * /etc/vendgate/secrets.env), refused in the YAML file, which is readable by more people and
 * ends up in backups and support tickets.
 */
export const SECRET_SETTINGS = [
  { path: 'provider.clientSecret', env: 'VENDGATE_PROVIDER_CLIENT_SECRET', list: false },
  { path: 'provider.apiKey', env: 'VENDGATE_PROVIDER_API_KEY', list: false },
  /** Comma-separated: all are accepted, so a rotation adds the new one before removing the old. */
  { path: 'provider.webhookSecrets', env: 'VENDGATE_WEBHOOK_SECRETS', list: true },
  { path: 'mqtt.password', env: 'VENDGATE_MQTT_PASSWORD', list: false },
  { path: 'fiscal.webkassa.token', env: 'VENDGATE_FISCAL_WEBKASSA_TOKEN', list: false },
  { path: 'fiscal.webkassa.password', env: 'VENDGATE_FISCAL_WEBKASSA_PASSWORD', list: false },
  { path: 'fiscal.webkassa.apiKey', env: 'VENDGATE_FISCAL_WEBKASSA_API_KEY', list: false },
  /** The kiosk's service menu PIN: a secret, so nobody who can read the YAML can open the menu. */
  { path: 'kiosk.servicePin', env: 'VENDGATE_SERVICE_PIN', list: false },
] as const;

/** The same list by key, for callers that name one secret. */
export const SECRET_ENV = {
  clientSecret: SECRET_SETTINGS[0].env,
  apiKey: SECRET_SETTINGS[1].env,
  webhookSecrets: SECRET_SETTINGS[2].env,
  mqttPassword: SECRET_SETTINGS[3].env,
  webkassaToken: SECRET_SETTINGS[4].env,
  webkassaPassword: SECRET_SETTINGS[5].env,
  webkassaApiKey: SECRET_SETTINGS[6].env,
  servicePin: SECRET_SETTINGS[7].env,
} as const;

const SECRETS_FILE = '/etc/vendgate/secrets.env';

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
export function loadSettings(options: { path?: string; env?: NodeJS.ProcessEnv; ports?: PortOverrides } = {}): LoadedSettings {
  // Under systemd the secrets come as a credential (LoadCredential=secrets.env:…), not in the environment.
  const { env } = withCredentials(options.env ?? process.env, 'secrets.env');
  const source = resolveConfigPath(options.path, env);
  const raw = readSettingsFile(source, 'device, provider, …');
  const problems: string[] = [];
  const fromFile = withoutSecrets(raw, problems);
  const { merged, environment } = mergeEnvironment(fromFile, env);
  environment.push(...mergePorts(merged, env, options.ports ?? {}, problems));
  return { settings: validate(merged, source, problems), source, environment };
}

/** Applies the port overrides to `merged`; returns the names that contributed (flags and variables). */
function mergePorts(merged: Record<string, unknown>, env: NodeJS.ProcessEnv, flags: PortOverrides, problems: string[]): string[] {
  const used: string[] = [];
  for (const { key, path, env: name, flag } of PORT_OVERRIDES) {
    const fromFlag = flags[key];
    const value = fromFlag ?? env[name];
    if (value === undefined || value === '') continue;
    const from = fromFlag !== undefined ? flag : name;
    used.push(from);
    const port = Number(value);
    if (!/^\d+$/.test(value.trim()) || port > 65535) {
      problems.push(`${path}: ${from} is "${value}", not a port number (0–65535)`);
      continue;
    }
    const [section, group, leaf] = path.split('.') as [string, string, string | undefined];
    const holder = (merged[section] ??= {}) as Record<string, unknown>;
    if (holder === null || typeof holder !== 'object' || Array.isArray(holder)) continue; // the schema reports the section
    if (leaf === undefined) holder[group] = port;
    else {
      const inner = (holder[group] ??= {}) as Record<string, unknown>;
      if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) inner[leaf] = port;
    }
  }
  return used;
}

/** Reads a YAML settings file into a mapping; SettingsError for a missing file, bad YAML or a non-mapping. */
export function readSettingsFile(source: string, sections: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(source, 'utf8');
  } catch (err) {
    throw new SettingsError(source, [unreadable(source, err as NodeJS.ErrnoException)]);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new SettingsError(source, [yamlProblem(text, err)]);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new SettingsError(source, [`the file must be a YAML mapping with the sections ${sections}`]);
  }
  return raw as Record<string, unknown>;
}

/** Validates an object already in memory (tests, the selftest). */
export function parseSettings(input: unknown, source = '(in memory)'): Readonly<Settings> {
  return validate(input, source, []);
}

/**
 * Unknown keys (with the likely intended one), then the schema, on what is left: every problem at
 * once, each as `path: message`, together with those found before (`problems`).
 */
function validate(input: unknown, source: string, problems: string[]): Readonly<Settings> {
  // Built for this check and dropped after it (schema.ts): the settings are parsed once per start.
  const schema = settingsSchema();
  let checked = input;
  if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    const unknown = findUnknownKeys(schema, input);
    for (const { path, suggestion } of unknown) {
      const secret = SECRET_SETTINGS.find((s) => s.path === path.replace(/\.[^.]+$/, `.${suggestion}`));
      const hint = suggestion === null ? '' : ` did you mean "${suggestion}"?`;
      problems.push(`${path}: unknown key;${hint}${secret ? ` (a secret: set ${secret.env} in ${SECRETS_FILE}, never in the file)` : ''}`);
    }
    checked = withoutKeys(input as Record<string, unknown>, unknown);
  }
  // Parsed once per start: zod's compiled fast path (a `new Function` per object schema, ~50 of
  // them here) costs more to build than it saves on one parse; the slow path is the same checks.
  const result = schema.safeParse(checked, { jitless: true });
  if (!result.success) {
    problems.push(...result.error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : '(top level)'}: ${issue.message}`));
  }
  if (problems.length > 0 || !result.success) throw new SettingsError(source, problems);
  return deepFreeze(result.data);
}

/** A copy without the secrets the file must not hold; each one found is a problem (its value never shown). */
function withoutSecrets(raw: Record<string, unknown>, problems: string[]): Record<string, unknown> {
  const copy = structuredClone(raw);
  for (const { path, env } of SECRET_SETTINGS) {
    const { holder, key } = holderOf(copy, path, false);
    if (holder && key in holder) {
      problems.push(`${path}: secrets are not read from the file; set ${env} in ${SECRETS_FILE}`);
      delete (holder as Record<string, unknown>)[key];
    }
  }
  return copy;
}

/**
 * The object holding a secret's last key (`fiscal.webkassa.token` → settings.fiscal.webkassa), or
 * null where a level is missing (created when `create`) or is not an object.
 */
function holderOf(root: Record<string, unknown>, path: string, create: boolean): { holder: Record<string, unknown> | null; key: string } {
  const parts = path.split('.');
  const key = parts.pop() ?? path;
  let holder: unknown = root;
  for (const part of parts) {
    const level = holder as Record<string, unknown>;
    if (create) level[part] ??= {};
    holder = level[part];
    if (holder === null || typeof holder !== 'object' || Array.isArray(holder)) return { holder: null, key };
  }
  return { holder: holder as Record<string, unknown>, key };
}

function mergeEnvironment(raw: Record<string, unknown>, env: NodeJS.ProcessEnv) {
  const merged = structuredClone(raw);
  const environment: string[] = [];
  for (const { path, env: name, list } of SECRET_SETTINGS) {
    const value = env[name];
    if (!value) continue;
    const { holder, key } = holderOf(merged, path, true);
    if (!holder) continue; // the schema reports the section
    holder[key] = list
      ? value
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean)
      : value;
    environment.push(name);
  }
  return { merged, environment };
}

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** Why the settings file cannot be read, and what to do: the missing file and the example to copy. */
function unreadable(source: string, err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ENOENT':
      return `there is no such file. Start from an example: sudo cp ${join(EXAMPLES_DIR, 'sandbox.yaml')} ${source} (the others in ${EXAMPLES_DIR}/), or name another file with --config`;
    case 'EACCES':
      return 'permission denied: the file is root:vendgate 0640 on a device, so run the command with sudo';
    case 'EISDIR':
      return 'this is a directory: name the YAML file inside it';
    default:
      return `cannot read the file: ${err.code ?? String(err)}`;
  }
}

/** A YAML syntax error as a person reads it: what, where, and the line with a caret under the spot. */
function yamlProblem(text: string, err: unknown): string {
  if (!(err instanceof YAMLParseError) || !err.linePos) return `not valid YAML: ${(err as Error).message.split('\n')[0]}`;
  const { line, col } = err.linePos[0];
  // The library's message ends with its own "at line L, column C:" and a frame: keep the sentence.
  const what = (err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
  const lines = text.split('\n');
  // At the end of the file the spot is an empty line: show the line before it too, where the cause is.
  const shown = lines[line - 1]?.trim() ? [line] : [line - 1, line].filter((n) => n >= 1);
  const gutter = String(Math.max(...shown)).length;
  const frame = shown.map((n) => `    ${String(n).padStart(gutter)} | ${lines[n - 1] ?? ''}`);
  frame.push(`    ${' '.repeat(gutter)} | ${' '.repeat(Math.max(0, col - 1))}^`);
  return `not valid YAML at line ${line}, column ${col}: ${what}\n${frame.join('\n')}`;
}
