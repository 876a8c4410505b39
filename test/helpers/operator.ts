import { randomUUID } from 'node:crypto';
import { generateOperatorKey, signCommand, SIGNED_COMMANDS, type CommandAuthSettings } from '../../src/mqtt/index.js';

/**
 * The operator of the tests: one ed25519 key pair made per test process, the settings that make a
 * device trust it, and a signer. Commands that move money, goods or prices must be signed
 * (docs/security.md); `commandPayload` signs those and leaves read-only ones plain.
 */
export interface TestOperator {
  keyId: string;
  privateKeyPem: string;
  publicKey: string;
}

export function createOperator(keyId = 'test-ops'): TestOperator {
  return { keyId, ...generateOperatorKey() };
}

export const OPERATOR = createOperator();

/** Settings `commands` that trust these operators. */
export function commandSettings(...operators: TestOperator[]): CommandAuthSettings {
  const keys = (operators.length ? operators : [OPERATOR]).map((operator) => ({ id: operator.keyId, publicKey: operator.publicKey }));
  return { keys, maxLifetimeSec: 3_600, clockSkewSec: 300 };
}

/**
 * The arguments of `vendgate command send <command>` signing with the key in `keyFile` (its id
 * `keyId`), `body` as its JSON; the caller adds the profile (--config) and any other option.
 */
export function commandSendArgs(command: string, keyFile: string, keyId: string, body: Record<string, unknown>): string[] {
  return ['command', 'send', command, '--key', keyFile, '--key-id', keyId, '--body', JSON.stringify(body)];
}

/** A signed envelope as the JSON text published on `cmd/<command>`. */
export function signedPayload(
  deviceId: string,
  command: string,
  body: Record<string, unknown>,
  options: { requestId?: string; operator?: TestOperator; issuedAt?: Date; expiresAt?: Date; ttlMs?: number } = {},
): string {
  const operator = options.operator ?? OPERATOR;
  const issuedAt = options.issuedAt ?? new Date();
  const expiresAt = options.expiresAt ?? new Date(issuedAt.getTime() + (options.ttlMs ?? 600_000));
  return JSON.stringify(
    signCommand({
      privateKeyPem: operator.privateKeyPem,
      keyId: operator.keyId,
      deviceId,
      command,
      requestId: options.requestId ?? randomUUID(),
      body,
      issuedAt,
      expiresAt,
    }),
  );
}

/**
 * What an operator's tool publishes for `{requestId, ...fields}`: signed when the command needs it,
 * plain otherwise (ping, selftest).
 */
export function commandPayload(deviceId: string, command: string, body: { requestId: string } & Record<string, unknown>): string {
  if (!SIGNED_COMMANDS.has(command)) return JSON.stringify(body);
  const { requestId, ...fields } = body;
  return signedPayload(deviceId, command, fields, { requestId });
}
