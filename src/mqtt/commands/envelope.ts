import { ErrorCodes } from '../../util/errors.js';

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
  // Sets the counted stock and starts a new audit interval (families/dex.ts).
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

/**
 * The global reference of an order, the way a signed command names it: `<device>-<db>-<order>-<nonce>`
 * (the order's provider reference). The order number alone repeats after a restore or a
 * replacement; device, database and nonce together never do.
 */
export function orderReference(parts: { deviceId: string; dbId: string; orderId: number; nonce: string }): string {
  return `${parts.deviceId}-${parts.dbId}-${parts.orderId}-${parts.nonce}`;
}
