import { resolveConfigPath, readSettingsFile, SECRET_ENV, SettingsError } from './load.js';
import { withCredentials } from './credentials.js';
import { mqttSchema } from './sections/mqtt.js';
import type { Settings } from './schema.js';

/**
 * The operator's side of `vendgate command send`: only the broker (`mqtt`) and, as the default
 * `--device`, `device.id`. A device's whole settings file is one (on the device itself); so is the
 * ops.yaml `vendgate setup` writes, which has nothing else: no catalog, provider or hardware is
 * needed to send a command. The password comes from VENDGATE_MQTT_PASSWORD, never from the file.
 */
export interface OperatorProfile {
  mqtt: Readonly<Settings['mqtt']>;
  deviceId: string | null;
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
  const parsed = mqttSchema.safeParse(mqtt);
  if (!parsed.success) problems.push(...parsed.error.issues.map((issue) => `mqtt.${issue.path.join('.')}: ${issue.message}`));
  const device = raw.device as { id?: unknown } | undefined;
  const deviceId = device && typeof device === 'object' && typeof device.id === 'string' ? device.id : null;
  if (problems.length > 0 || !parsed.success) throw new SettingsError(source, problems);
  return { mqtt: Object.freeze(parsed.data), deviceId, source };
}
