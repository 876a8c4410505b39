import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadOperatorProfile, loadSettings } from '../settings/index.js';
import {
  answerKeyPath,
  readAnswerPublicKey,
  COMMAND_NAMES,
  generateOperatorKey,
  learnDatabase,
  withoutLogin,
  publicKeyOf,
  sendCommand,
  signCommand,
  SIGNED_COMMANDS,
  type CommandEnvelope,
} from '../mqtt/index.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';

export interface CommandOptions {
  action?: string;
  name?: string;
  config?: string;
  key?: string;
  keyId?: string;
  dbId?: string;
  device?: string;
  deviceKey?: string;
  body?: string;
  ttl?: string;
  requestId?: string;
  out?: string;
  timeoutMs?: string;
}

const KEY_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * `vendgate command keygen|sign|send`: the operator's side of signed commands (docs/security.md).
 * keygen writes a private key file (mode 0600, never over an existing file) and prints the public
 * key for the devices' settings; sign prints an envelope; send signs, publishes and waits for the answer.
 */
export async function commandCommand(options: CommandOptions, io: CliIo): Promise<number> {
  switch (options.action) {
    case 'keygen':
      return keygen(options, io);
    case 'sign': {
      const { envelope } = signed(
        options,
        requireValue(options.device, '--device ID (the device the command is for)'),
        options.dbId ?? null,
      );
      print(io.stdout, JSON.stringify(envelope));
      return EXIT.OK;
    }
    case 'send':
      return send(options, io);
    case 'device-key':
      return deviceKey(options, io);
    default:
      throw new UsageError(
        'usage: vendgate command keygen --out FILE --key-id ID | sign NAME … | send NAME … | device-key (vendgate command --help)',
      );
  }
}

function keygen(options: CommandOptions, io: CliIo): number {
  const out = requireValue(options.out, '--out FILE (where the private key is written)');
  const keyId = requireValue(options.keyId, '--key-id ID (e.g. ops-2026-12)');
  if (!KEY_ID.test(keyId)) throw new UsageError('--key-id: letters, digits and . _ : - only, at most 64');
  const { privateKeyPem, publicKey } = generateOperatorKey();
  try {
    writeFileSync(out, privateKeyPem, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'EEXIST' ? `${out} exists; a key is never overwritten (choose another file)` : `cannot write ${out}: ${code}`,
    );
  }
  print(io.stderr, `private key written to ${out} (mode 0600): keep it off the devices`);
  print(
    io.stdout,
    [
      "# add to each device's settings (commands.keys), then restart it:",
      'commands:',
      '  keys:',
      `    - id: ${keyId}`,
      `      publicKey: ${publicKey}`,
    ].join('\n'),
  );
  return EXIT.OK;
}

function signed(
  options: CommandOptions,
  deviceId: string,
  dbId: string | null,
): { envelope: CommandEnvelope; requestId: string; name: string } {
  const name = requireValue(options.name, `the command NAME (${[...SIGNED_COMMANDS].join(', ')}, …)`);
  if (!(COMMAND_NAMES as string[]).includes(name)) throw new UsageError(`unknown command "${name}"; known: ${COMMAND_NAMES.join(', ')}`);
  const keyPath = requireValue(options.key, '--key FILE (the private key from keygen)');
  const keyId = requireValue(options.keyId, '--key-id ID (the id the devices know the key by)');
  let privateKeyPem: string;
  try {
    privateKeyPem = readFileSync(keyPath, 'utf8');
    publicKeyOf(privateKeyPem);
  } catch (err) {
    throw new UsageError(`--key ${keyPath}: not a readable ed25519 private key (${(err as Error).message})`);
  }
  let body: Record<string, unknown> = {};
  if (options.body !== undefined) {
    try {
      body = JSON.parse(options.body) as Record<string, unknown>;
    } catch {
      throw new UsageError(`--body: not JSON: ${options.body}`);
    }
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw new UsageError('--body: a JSON object of the command\'s fields, e.g. {"order":"vm-1-a1b2c3-7-0badf00d"}');
    if ('orderId' in body)
      throw new UsageError(
        '--body: orderId is a local number a restored or replaced database gives again; name the order by its reference: {"order":"<device>-<db>-<order>-<nonce>"} (vendgate orders, the alarm or the order history show it)',
      );
  }
  if (dbId !== null && !/^[a-z0-9]+$/.test(dbId))
    throw new UsageError(`--db-id: a database id is lower-case letters and digits, not "${dbId}"`);
  const ttlSec = options.ttl === undefined ? 300 : Number(options.ttl);
  if (!Number.isInteger(ttlSec) || ttlSec < 1) throw new UsageError('--ttl: seconds the command stays valid, a positive integer');
  const requestId = options.requestId ?? randomUUID();
  const now = Date.now();
  const envelope = signCommand({
    privateKeyPem,
    keyId,
    deviceId,
    ...(dbId !== null ? { dbId } : {}),
    command: name,
    requestId,
    body,
    issuedAt: new Date(now),
    expiresAt: new Date(now + ttlSec * 1000),
  });
  return { envelope, requestId, name };
}

async function send(options: CommandOptions, io: CliIo): Promise<number> {
  const profile = loadOperatorProfile({ path: options.config, env: io.env });
  if (profile.mqtt.url === '') throw new UsageError(`mqtt.url is empty in ${profile.source}: there is no broker to send to`);
  const deviceId = options.device ?? profile.deviceId;
  if (!deviceId) throw new UsageError(`--device ID: ${profile.source} names no device.id`);
  const timeoutMs = options.timeoutMs === undefined ? 15_000 : Number(options.timeoutMs);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100) throw new UsageError('--timeout-ms: a whole number of milliseconds, at least 100');
  // Whose word counts: the key given, the operator's list, or on the device itself its own key file.
  const devicePublicKey =
    options.deviceKey ?? profile.deviceKeys[deviceId] ?? ownAnswerKey(profile.storagePath, deviceId, profile.deviceId);
  if (!devicePublicKey)
    throw new UsageError(
      `no answer key known for device ${deviceId}: an answer cannot be told from a forgery. Run vendgate command device-key on the device and pass it with --device-key, or list it under commands.deviceKeys.${deviceId}`,
    );
  // Signed for the database the device runs now: a restored or replaced one refuses it.
  const dbId = options.dbId ?? (await learnDatabase({ settings: profile.mqtt, deviceId, timeoutMs: Math.min(timeoutMs, 5_000) }));
  if (dbId === null) {
    print(
      io.stderr,
      `vendgate: the broker at ${withoutLogin(profile.mqtt.url)} holds no state of device ${deviceId} that names its database (is it online, and running this release?); pass --db-id ID`,
    );
    return EXIT.FAILURE;
  }
  const { envelope, requestId, name } = signed(options, deviceId, dbId);
  const outcome = await sendCommand({ settings: profile.mqtt, deviceId, command: name, envelope, requestId, timeoutMs, devicePublicKey });
  if (outcome.forged > 0)
    print(io.stderr, `vendgate: ${outcome.forged} answer(s) with this request id were not signed by ${deviceId} and were refused`);
  if (!outcome.answered) {
    print(io.stderr, `vendgate: ${outcome.detail}`);
    return EXIT.FAILURE;
  }
  print(io.stdout, JSON.stringify(outcome.result, null, 2));
  return outcome.result.ok === true ? EXIT.OK : EXIT.FAILURE;
}

/** On the device itself (its own settings), its answer key beside the database; else null. */
function ownAnswerKey(storagePath: string, deviceId: string, configuredId: string | null): string | null {
  if (deviceId !== configuredId) return null;
  try {
    return readAnswerPublicKey(answerKeyPath(storagePath));
  } catch {
    return null;
  }
}

/** `vendgate command device-key`: the public half of this device's answer key, for the operator's settings. */
function deviceKey(options: CommandOptions, io: CliIo): number {
  const { settings } = loadSettings({ path: options.config, env: io.env });
  const path = answerKeyPath(settings.storage.path);
  let publicKey: string | null;
  try {
    publicKey = readAnswerPublicKey(path);
  } catch (err) {
    print(io.stderr, `vendgate: ${path}: not a readable key (${(err as Error).message})`);
    return EXIT.FAILURE;
  }
  if (!publicKey) {
    print(
      io.stderr,
      `vendgate: no answer key yet at ${path}: the service makes it at its first start (start it once, then run this again)`,
    );
    return EXIT.FAILURE;
  }
  print(
    io.stdout,
    [
      "# add to the operator's settings (the configuration vendgate command send reads):",
      'commands:',
      '  deviceKeys:',
      `    ${settings.device.id}: ${publicKey}`,
    ].join('\n'),
  );
  return EXIT.OK;
}

function requireValue(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`);
  return value;
}
