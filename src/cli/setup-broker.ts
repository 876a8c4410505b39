import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isScalar, stringify, type parseDocument } from 'yaml';

/** The operator's broker as setup asked it: none, the device's own embedded one, or a URL with its login and CA. */
export interface BrokerAnswers {
  url: string;
  username?: string;
  /** Absent: the one in secrets.env is kept. */
  password?: string;
  caPath?: string;
}

type Ask = (question: string, fallback: string | undefined, check: (value: string) => string | null, secret?: boolean) => Promise<string>;

const BROKER_URL = /^(mqtts?|wss?):\/\/[^\s/:]+(:\d{1,5})?\/?$/;

/**
 * Asks where the operator watches the fleet and sends signed commands from: a broker URL, its
 * login (the password goes to secrets.env), the CA of a TLS broker; or none (no MQTT).
 */
export async function askBroker(ask: Ask, current: (path: string[]) => string | undefined, passwordSet: boolean): Promise<BrokerAnswers> {
  const now = current(['mqtt', 'url']);
  const url = await ask(
    "The operator's MQTT broker: mqtts://host:8883, embedded (this device only), or none",
    now === undefined || now === '' ? 'none' : now,
    (v) =>
      v === 'none' || v === 'embedded' || BROKER_URL.test(v) ? null : `"${v}" is not a broker URL such as mqtts://broker.example.com:8883`,
  );
  if (url === 'none' || url === 'embedded') return { url: url === 'none' ? '' : 'embedded' };
  const answers: BrokerAnswers = { url };
  const username = await ask('MQTT user name of this device (none: no login)', current(['mqtt', 'username']) ?? 'none', (v) =>
    /\s/.test(v) ? 'no spaces in a user name' : null,
  );
  if (username !== 'none') {
    answers.username = username;
    const password = await ask(
      'MQTT password',
      passwordSet ? '(set)' : undefined,
      (v) => (v === '' ? 'the password is needed' : null),
      true,
    );
    if (password !== '(set)') answers.password = password;
  }
  if (url.startsWith('mqtts://') || url.startsWith('wss://')) {
    const ca = await ask("The broker's CA certificate file (none: the system's CAs)", current(['mqtt', 'caPath']) ?? 'none', (v) =>
      v === 'none' || existsSync(v) ? null : `no file ${v}`,
    );
    if (ca !== 'none') answers.caPath = ca;
  }
  return answers;
}

/** Sets a key, dropping the comment of the value it replaces (it described the old value). */
export function setAnswer(doc: ReturnType<typeof parseDocument>, path: string[], value: unknown): void {
  const node = doc.getIn(path, true);
  if (isScalar(node) && node.value !== value) node.comment = undefined;
  doc.setIn(path, value);
}

/** The broker answers in the device's settings; a key the answer leaves out is removed. */
export function composeBroker(doc: ReturnType<typeof parseDocument>, broker: BrokerAnswers): void {
  setAnswer(doc, ['mqtt', 'url'], broker.url);
  for (const key of ['username', 'caPath'] as const) {
    if (broker[key] !== undefined) setAnswer(doc, ['mqtt', key], broker[key]);
    else if (doc.hasIn(['mqtt', key])) doc.deleteIn(['mqtt', key]);
  }
}

/**
 * The operator's `command send` profile (ops.yaml): the broker and the device, nothing else. It
 * goes to the operator's machine with the operator's own login; the password is read from
 * VENDGATE_MQTT_PASSWORD there, never from the file.
 */
export function operatorProfile(deviceId: string, prefix: string | undefined, broker: BrokerAnswers): string {
  const mqtt: Record<string, unknown> = { url: broker.url };
  if (prefix && prefix !== 'vendgate') mqtt.prefix = prefix;
  if (broker.username) mqtt.username = broker.username;
  if (broker.caPath) mqtt.caPath = broker.caPath;
  return [
    "# The operator's side of signed commands, written by vendgate setup:",
    '#   VENDGATE_MQTT_PASSWORD=… vendgate command send NAME --config ops.yaml --key ops.key --key-id ID --body JSON',
    "# Copy it to the machine the commands are sent from. Give it the operator's own broker login",
    "# (username below, password in VENDGATE_MQTT_PASSWORD) when the broker has one: this is the device's.",
    '# device.id is the default --device; --device ID sends to another device on the same broker.',
    stringify({ device: { id: deviceId }, mqtt }).trimEnd(),
    '',
  ].join('\n');
}

/** Writes ops.yaml beside the settings when the operator has a broker to send from; its path, or null. */
export function writeOperatorProfile(
  configPath: string,
  doc: ReturnType<typeof parseDocument>,
  deviceId: string,
  broker: BrokerAnswers,
): string | null {
  if (broker.url === '' || broker.url === 'embedded') return null;
  // No secret in it: the operator copies it to the machine commands are sent from.
  const path = join(dirname(configPath), 'ops.yaml');
  const prefix = doc.getIn(['mqtt', 'prefix']);
  writeFileSync(path, operatorProfile(deviceId, typeof prefix === 'string' ? prefix : undefined, broker), { mode: 0o644 });
  return path;
}
