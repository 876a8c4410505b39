import { createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { ENVELOPE_VERSION, type CommandEnvelope, type SignedFields } from './envelope.js';

/** The operator's side of the envelope (envelope.ts): keys, and signing one command. */

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
