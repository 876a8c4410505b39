import { resolveConfigPath, readSettingsFile, SECRET_ENV, SettingsError } from './load.js';
import { withCredentials } from './credentials.js';
import { mqttSchema } from './sections/mqtt.js';
import { commandsSchema } from './sections/commands.js';
import type { Settings } from './schema.js';

/**
 * The operator's side of `vendgate command send`: only the broker (`mqtt`), as the default
 * `--device`, `device.id`, and the devices' answer keys (`commands.deviceKeys`). A device's whole settings file is one (on the device itself); so is the
 * ops.yaml `vendgate setup` writes, which has nothing else: no catalog, provider or hardware is
 * needed to send a command. The password comes from VENDGATE_MQTT_PASSWORD, never from the file.
 */
export interface OperatorProfile {
  mqtt: Readonly<Settings['mqtt']>;
  deviceId: string | null;
  /** `commands.deviceKeys`: each device's answer key, so an answer can be told from a forgery. */
  deviceKeys: Readonly<Record<string, string>>;
  /** `storage.path` when the profile is a device's own settings (its answer key lies beside the database). */
  storagePath: string;
  source: string;
}

export function loadOperatorProfile(options: { path?: string; env?: NodeJS.ProcessEnv }): OperatorProfile {
  const { env } = withCredentials(options.env ?? process.env, 'secrets.env');
  const source = resolveConfigPath(options.path, env);
  const raw = readSettingsFile(source, 'mqtt (and device.id)');
  const problems: string[] = [];
  const section = raw.mqtt ?? {};
  if (section === null || typeof section !== 'object' || Array.isArray(section)) throw new SettingsError(source, ['mqtt: a mapping']);
  const mqtt = { ...(section as Record<string, unknown>) };
  if ('password' in mqtt) problems.push(`mqtt.password: a secret: set ${SECRET_ENV.mqttPassword} in the environment, never in the file`);
  delete mqtt.password;
  const password = env[SECRET_ENV.mqttPassword];
  if (password) mqtt.password = password;
  const parsed = mqttSchema().safeParse(mqtt);
  if (!parsed.success) problems.push(...parsed.error.issues.map((issue) => `mqtt.${issue.path.join('.')}: ${issue.message}`));
  const device = raw.device as { id?: unknown } | undefined;
  const deviceId = device && typeof device === 'object' && typeof device.id === 'string' ? device.id : null;
  const commands = raw.commands as { deviceKeys?: unknown } | undefined;
  const keys = commandsSchema().shape.deviceKeys.safeParse(commands && typeof commands === 'object' ? commands.deviceKeys : undefined);
  if (!keys.success) problems.push(...keys.error.issues.map((issue) => `commands.deviceKeys.${issue.path.join('.')}: ${issue.message}`));
  const storage = raw.storage as { path?: unknown } | undefined;
  const storagePath = storage && typeof storage === 'object' && typeof storage.path === 'string' ? storage.path : './data/vendgate.db';
  if (problems.length > 0 || !parsed.success || !keys.success) throw new SettingsError(source, problems);
  return { mqtt: Object.freeze(parsed.data), deviceId, deviceKeys: Object.freeze({ ...keys.data }), storagePath, source };
}
