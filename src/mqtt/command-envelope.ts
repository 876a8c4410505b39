import { ErrorCodes } from '../util/errors.js';
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

/**
 * Signed operator commands (docs/security.md has the wire format for other tools). The envelope is
 *
 *   { "signed": "<JSON text>", "keyId": "<operator key id>", "signature": "<base64 ed25519 over the UTF-8 bytes of signed>" }
 *
 * and the signed text is the JSON object
 *
 *   { "v": 1, "requestId", "deviceId", "dbId"?, "command", "issuedAt", "expiresAt", "body": { ...the command's fields } }
 *
 * `dbId` (optional, and always set by `vendgate command send`) binds the command to the database the
 * device runs: an envelope for another database is refused, and so is one issued before this
 * database's current life began (a restore or a replacement: the request ids it used are gone with
 * the database they were recorded in, so nothing older may run). A command that names an order
 * names it by its global reference (`orderReference`), never a local order number, which repeats.
 *
 * The signature covers the exact bytes of `signed`, so no canonical JSON is needed: a signer writes
 * any JSON text, signs those bytes, and sends them as a string.
 */
export const ENVELOPE_VERSION = 1;

/** Commands that move money, goods or prices: refused unless signed by an operator key the device knows. */
export const SIGNED_COMMANDS: ReadonlySet<string> = new Set([
  'refund',
  'resolve',
  'settle',
  'catalog',
  'catalog_rollback',
  'test_vend',
  'refill',
  'clear_jam',
  'out_of_service',
  // Sets the counted stock and starts a new audit interval (src/mqtt/dex-commands.ts).
  'visit',
]);

export interface OperatorKey {
  id: string;
  /** base64 of the DER SubjectPublicKeyInfo (`MCowBQYDK2VwAyEA…`). */
  publicKey: string;
}

export interface CommandAuthSettings {
  keys: readonly OperatorKey[];
  maxLifetimeSec: number;
  clockSkewSec: number;
}

export interface SignedFields {
  v: number;
  requestId: string;
  deviceId: string;
  /** The database the command is for (optional: `vendgate command send` always sets it). */
  dbId?: string;
  command: string;
  issuedAt: string;
  expiresAt: string;
  body: Record<string, unknown>;
}

export interface CommandEnvelope {
  signed: string;
  keyId: string;
  signature: string;
}

/** Codes of a refused envelope (stable: operators' tools match on them). */
export const EnvelopeErrorCodes = {
  UNSIGNED: ErrorCodes.COMMAND_UNSIGNED,
  BAD_SIGNATURE: ErrorCodes.COMMAND_SIGNATURE,
  UNKNOWN_KEY: ErrorCodes.COMMAND_UNKNOWN_KEY,
  EXPIRED: ErrorCodes.COMMAND_EXPIRED,
  NOT_YET_VALID: ErrorCodes.COMMAND_NOT_YET_VALID,
  WRONG_DEVICE: ErrorCodes.COMMAND_OTHER_DEVICE,
  WRONG_COMMAND: ErrorCodes.COMMAND_OTHER_TOPIC,
  WRONG_DATABASE: ErrorCodes.COMMAND_OTHER_DATABASE,
  BEFORE_DATABASE: ErrorCodes.COMMAND_BEFORE_DATABASE,
  MALFORMED: ErrorCodes.COMMAND_MALFORMED,
} as const;

export type EnvelopeErrorCode = (typeof EnvelopeErrorCodes)[keyof typeof EnvelopeErrorCodes];

export interface VerifiedCommand {
  ok: true;
  keyId: string;
  requestId: string;
  body: Record<string, unknown>;
  issuedAt: number;
  expiresAt: number;
  /** sha256 of the signed text: tells a replay of these bytes from another command reusing the request id. */
  digest: string;
}

export interface RefusedEnvelope {
  ok: false;
  /** The first problem's code; `problems` lists every one. */
  code: EnvelopeErrorCode;
  problems: { code: EnvelopeErrorCode; message: string }[];
  /** The request id the envelope claims (unverified: only to correlate the answer). */
  requestId: string | null;
  keyId: string | null;
  /** The command's fields as the signed text claims them (unverified: only to list their problems too), when readable. */
  body: Record<string, unknown> | null;
}

export function isEnvelope(value: Record<string, unknown>): boolean {
  return 'signed' in value || 'signature' in value || 'keyId' in value;
}

/** An ed25519 key pair: the private key as PKCS#8 PEM (for the signer's file), the public one as base64 SPKI (for the settings). */
export function generateOperatorKey(): { privateKeyPem: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  };
}

/** The public key (base64 SPKI) of a private key PEM. */
export function publicKeyOf(privateKeyPem: string): string {
  return createPublicKey(createPrivateKey(privateKeyPem)).export({ format: 'der', type: 'spki' }).toString('base64');
}

/** Signs one command. `body` holds the command's own fields (no requestId). */
export function signCommand(input: {
  privateKeyPem: string;
  keyId: string;
  deviceId: string;
  /** The database the command is for (the device's retained state says which it runs). */
  dbId?: string;
  command: string;
  requestId: string;
  body: Record<string, unknown>;
  issuedAt: Date;
  expiresAt: Date;
}): CommandEnvelope {
  const fields: SignedFields = {
    v: ENVELOPE_VERSION,
    requestId: input.requestId,
    deviceId: input.deviceId,
    ...(input.dbId !== undefined ? { dbId: input.dbId } : {}),
    command: input.command,
    issuedAt: input.issuedAt.toISOString(),
    expiresAt: input.expiresAt.toISOString(),
    body: input.body,
  };
  const signed = JSON.stringify(fields);
  const key = createPrivateKey(input.privateKeyPem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`the private key is ${key.asymmetricKeyType ?? 'unknown'}, not ed25519`);
  const signature = sign(null, Buffer.from(signed, 'utf8'), key).toString('base64');
  return { signed, keyId: input.keyId, signature };
}

/**
 * Verifies an envelope for `command` on this device. Every problem is listed (a bad signature and
 * an expiry and another device are three lines), and nothing in it is trusted unless `ok`.
 */
export function verifyCommand(
  envelope: Record<string, unknown>,
  context: {
    command: string;
    deviceId: string;
    now: number;
    settings: CommandAuthSettings;
    /** The database the device runs and when its current life began (ms; null when unknown). */
    database?: { id: string; since: number | null };
  },
): VerifiedCommand | RefusedEnvelope {
  const problems: RefusedEnvelope['problems'] = [];
  const add = (code: EnvelopeErrorCode, message: string) => problems.push({ code, message });
  const keyId = typeof envelope.keyId === 'string' ? envelope.keyId : null;
  const extra = Object.keys(envelope).filter((key) => !['signed', 'keyId', 'signature'].includes(key));
  if (extra.length > 0)
    add(EnvelopeErrorCodes.MALFORMED, `unknown envelope fields ${extra.join(', ')}: put the command's fields in the signed body`);

  let fields: Partial<SignedFields> | null = null;
  if (typeof envelope.signed !== 'string') add(EnvelopeErrorCodes.MALFORMED, 'signed: the JSON text that was signed, as a string');
  else {
    try {
      const parsed: unknown = JSON.parse(envelope.signed);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) fields = parsed as Partial<SignedFields>;
      else add(EnvelopeErrorCodes.MALFORMED, 'signed: must be the JSON text of an object');
    } catch {
      add(EnvelopeErrorCodes.MALFORMED, 'signed: is not JSON text');
    }
  }
  const requestId =
    typeof fields?.requestId === 'string' && fields.requestId.length > 0 && fields.requestId.length <= 128 ? fields.requestId : null;

  // The signature first: it says whether the rest can be believed.
  const key = keyId === null ? undefined : context.settings.keys.find((candidate) => candidate.id === keyId);
  if (keyId === null) add(EnvelopeErrorCodes.MALFORMED, 'keyId: the id of the operator key that signed, as a string');
  else if (!key) {
    const known = context.settings.keys.map((candidate) => candidate.id);
    add(
      EnvelopeErrorCodes.UNKNOWN_KEY,
      `key "${keyId}" is not one of this device's operator keys (${known.length ? known.join(', ') : 'none configured: commands.keys'})`,
    );
  }
  if (typeof envelope.signature !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(envelope.signature)) {
    add(EnvelopeErrorCodes.MALFORMED, 'signature: base64 of the ed25519 signature over the bytes of signed');
  } else if (key && typeof envelope.signed === 'string') {
    let good = false;
    try {
      good = verify(null, Buffer.from(envelope.signed, 'utf8'), publicKeyObject(key.publicKey), Buffer.from(envelope.signature, 'base64'));
    } catch {
      good = false;
    }
    if (!good) add(EnvelopeErrorCodes.BAD_SIGNATURE, `the signature does not verify with key "${key.id}"`);
  }

  let issuedAt = Number.NaN;
  let expiresAt = Number.NaN;
  if (fields) {
    if (fields.v !== ENVELOPE_VERSION) add(EnvelopeErrorCodes.MALFORMED, `signed.v: must be ${ENVELOPE_VERSION}`);
    if (requestId === null) add(EnvelopeErrorCodes.MALFORMED, 'signed.requestId: a string of 1 to 128 characters, new for every command');
    if (fields.deviceId !== context.deviceId) {
      add(EnvelopeErrorCodes.WRONG_DEVICE, `signed for device "${String(fields.deviceId)}", this is "${context.deviceId}"`);
    }
    if (context.database && fields.dbId !== undefined && fields.dbId !== context.database.id) {
      add(
        EnvelopeErrorCodes.WRONG_DATABASE,
        `signed for database "${String(fields.dbId)}", this device runs database "${context.database.id}" (restored or replaced since): sign it again for this one`,
      );
    }
    if (fields.command !== context.command) {
      add(EnvelopeErrorCodes.WRONG_COMMAND, `signed as command "${String(fields.command)}" but published on cmd/${context.command}`);
    }
    if (!fields.body || typeof fields.body !== 'object' || Array.isArray(fields.body)) {
      add(EnvelopeErrorCodes.MALFORMED, "signed.body: the command's fields as an object ({} when it has none)");
    } else if ('requestId' in fields.body) {
      add(EnvelopeErrorCodes.MALFORMED, 'signed.body.requestId: the request id goes in signed.requestId only');
    }
    issuedAt = isoTime(fields.issuedAt);
    expiresAt = isoTime(fields.expiresAt);
    if (Number.isNaN(issuedAt))
      add(EnvelopeErrorCodes.MALFORMED, 'signed.issuedAt: an ISO 8601 time with a zone, e.g. 2026-12-01T21:00:00Z');
    if (Number.isNaN(expiresAt))
      add(EnvelopeErrorCodes.MALFORMED, 'signed.expiresAt: an ISO 8601 time with a zone, e.g. 2026-12-01T21:15:00Z');
    if (!Number.isNaN(issuedAt) && !Number.isNaN(expiresAt)) {
      const { maxLifetimeSec, clockSkewSec } = context.settings;
      if (expiresAt <= issuedAt) add(EnvelopeErrorCodes.MALFORMED, 'signed.expiresAt: must be after issuedAt');
      else if (expiresAt - issuedAt > maxLifetimeSec * 1000) {
        add(
          EnvelopeErrorCodes.MALFORMED,
          `valid for ${Math.round((expiresAt - issuedAt) / 1000)} s; this device accepts at most ${maxLifetimeSec} s (commands.maxLifetimeSec)`,
        );
      }
      if (context.now >= expiresAt)
        add(
          EnvelopeErrorCodes.EXPIRED,
          `expired at ${new Date(expiresAt).toISOString()} (device time ${new Date(context.now).toISOString()})`,
        );
      const since = context.database?.since ?? null;
      if (since !== null && issuedAt < since) {
        add(
          EnvelopeErrorCodes.BEFORE_DATABASE,
          `issued at ${new Date(issuedAt).toISOString()}, before this database's life on the device began (${new Date(since).toISOString()}: restored or replaced): whatever it was meant for is gone, sign it again`,
        );
      }
      if (issuedAt > context.now + clockSkewSec * 1000) {
        add(
          EnvelopeErrorCodes.NOT_YET_VALID,
          `issued at ${new Date(issuedAt).toISOString()}, in the future of the device's clock (${new Date(context.now).toISOString()})`,
        );
      }
    }
  }
  const first = problems[0];
  if (first) {
    const body = fields?.body && typeof fields.body === 'object' && !Array.isArray(fields.body) ? fields.body : null;
    return { ok: false, code: first.code, problems, requestId, keyId, body };
  }
  // No problem means each of these was checked above; the guard only satisfies the compiler.
  if (keyId === null || requestId === null || !fields?.body) throw new Error('unreachable: a verified envelope without its fields');
  return {
    ok: true,
    keyId,
    requestId,
    body: fields.body,
    issuedAt,
    expiresAt,
    digest: createHash('sha256')
      .update(envelope.signed as string, 'utf8')
      .digest('hex'),
  };
}

/**
 * The global reference of an order, the way a signed command names it: `<device>-<db>-<order>-<nonce>`
 * (the order's provider reference). The order number alone repeats after a restore or a
 * replacement; device, database and nonce together never do.
 */
export function orderReference(parts: { deviceId: string; dbId: string; orderId: number; nonce: string }): string {
  return `${parts.deviceId}-${parts.dbId}-${parts.orderId}-${parts.nonce}`;
}

const publicKeys = new Map<string, KeyObject>();
function publicKeyObject(text: string): KeyObject {
  let key = publicKeys.get(text);
  if (!key) {
    key = createPublicKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'spki' });
    publicKeys.set(text, key);
  }
  return key;
}

function isoTime(value: unknown): number {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return Number.NaN;
  return Date.parse(value);
}
