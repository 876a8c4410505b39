import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import {
  EnvelopeErrorCodes,
  type CommandAuthSettings,
  type EnvelopeErrorCode,
  type RefusedEnvelope,
  type SignedFields,
  type VerifiedCommand,
} from './envelope.js';
import { checkFields, type VerifyContext } from './validity.js';

/**
 * Verifies an envelope for `command` on this device. Every problem is listed (a bad signature and
 * an expiry and another device are three lines), and nothing in it is trusted unless `ok`.
 */
export function verifyCommand(envelope: Record<string, unknown>, context: VerifyContext): VerifiedCommand | RefusedEnvelope {
  const problems: RefusedEnvelope['problems'] = [];
  const add = (code: EnvelopeErrorCode, message: string) => problems.push({ code, message });
  const keyId = typeof envelope.keyId === 'string' ? envelope.keyId : null;
  const extra = Object.keys(envelope).filter((key) => !['signed', 'keyId', 'signature'].includes(key));
  if (extra.length > 0)
    add(EnvelopeErrorCodes.MALFORMED, `unknown envelope fields ${extra.join(', ')}: put the command's fields in the signed body`);

  const fields = readSigned(envelope.signed, add);
  const requestId =
    typeof fields?.requestId === 'string' && fields.requestId.length > 0 && fields.requestId.length <= 128 ? fields.requestId : null;

  // The signature first: it says whether the rest can be believed.
  checkSignature(envelope, keyId, context.settings, add);

  const { issuedAt, expiresAt } = fields ? checkFields(fields, requestId, context, add) : { issuedAt: Number.NaN, expiresAt: Number.NaN };
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

type Add = (code: EnvelopeErrorCode, message: string) => void;

/** The signed text's fields (not yet believed), or null with the reason added. */
function readSigned(signed: unknown, add: Add): Partial<SignedFields> | null {
  if (typeof signed !== 'string') {
    add(EnvelopeErrorCodes.MALFORMED, 'signed: the JSON text that was signed, as a string');
    return null;
  }
  try {
    const parsed: unknown = JSON.parse(signed);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Partial<SignedFields>;
    add(EnvelopeErrorCodes.MALFORMED, 'signed: must be the JSON text of an object');
  } catch {
    add(EnvelopeErrorCodes.MALFORMED, 'signed: is not JSON text');
  }
  return null;
}

/** The key named, known to this device, and its ed25519 signature over the bytes of `signed`. */
function checkSignature(envelope: Record<string, unknown>, keyId: string | null, settings: CommandAuthSettings, add: Add): void {
  const key = keyId === null ? undefined : settings.keys.find((candidate) => candidate.id === keyId);
  if (keyId === null) add(EnvelopeErrorCodes.MALFORMED, 'keyId: the id of the operator key that signed, as a string');
  else if (!key) {
    const known = settings.keys.map((candidate) => candidate.id);
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
