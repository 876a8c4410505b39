import { describe, expect, it } from 'vitest';
import { orderReference, signCommand, verifyCommand } from '../../src/mqtt/index.js';
import { OPERATOR, commandSettings, signedPayload } from '../helpers/operator.js';

/**
 * The envelope binds to the database the device runs: one signed for another database, or issued
 * before this database's current life began (a restore or a replacement), is refused.
 */
const settings = commandSettings();
const now = Date.parse('2026-12-04T21:00:00Z');

function envelope(options: { dbId?: string; issuedAt: number }) {
  return JSON.parse(
    JSON.stringify(
      signCommand({
        privateKeyPem: OPERATOR.privateKeyPem,
        keyId: OPERATOR.keyId,
        deviceId: 'vm-1',
        ...(options.dbId ? { dbId: options.dbId } : {}),
        command: 'refund',
        requestId: 'r-1',
        body: { order: orderReference({ deviceId: 'vm-1', dbId: 'ab12cd', orderId: 7, nonce: '0badf00d' }) },
        issuedAt: new Date(options.issuedAt),
        expiresAt: new Date(options.issuedAt + 300_000),
      }),
    ),
  ) as Record<string, unknown>;
}

const check = (env: Record<string, unknown>, database?: { id: string; since: number | null }) =>
  verifyCommand(env, { command: 'refund', deviceId: 'vm-1', now, settings, ...(database ? { database } : {}) });

describe('an envelope and the database it is for', () => {
  it('runs on the database it names, issued after its life began', () => {
    expect(check(envelope({ dbId: 'ab12cd', issuedAt: now - 1_000 }), { id: 'ab12cd', since: now - 60_000 })).toMatchObject({ ok: true });
    expect(orderReference({ deviceId: 'vm-1', dbId: 'ab12cd', orderId: 7, nonce: '0badf00d' })).toBe('vm-1-ab12cd-7-0badf00d');
  });

  it('another database: VG_ERR_COMMAND_OTHER_DATABASE', () => {
    const refused = check(envelope({ dbId: 'ab12cd', issuedAt: now - 1_000 }), { id: 'ff00ee', since: now - 60_000 });
    expect(refused).toMatchObject({ ok: false, code: 'VG_ERR_COMMAND_OTHER_DATABASE' });
  });

  it('issued before the database began (no dbId in it): VG_ERR_COMMAND_BEFORE_DATABASE', () => {
    const refused = check(envelope({ issuedAt: now - 120_000 }), { id: 'ab12cd', since: now - 60_000 });
    expect(refused).toMatchObject({ ok: false, code: 'VG_ERR_COMMAND_BEFORE_DATABASE' });
  });

  it('the signed text carries dbId only when given (the shape of older envelopes is unchanged)', () => {
    const plain = JSON.parse(JSON.parse(signedPayload('vm-1', 'refund', {})).signed as string) as Record<string, unknown>;
    expect('dbId' in plain).toBe(false);
  });
});
