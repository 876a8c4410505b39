import { ENVELOPE_VERSION, EnvelopeErrorCodes, type CommandAuthSettings, type EnvelopeErrorCode, type SignedFields } from './envelope.js';

/** What an envelope is checked against: this topic, this device, its settings, now, its database. */
export interface VerifyContext {
  command: string;
  deviceId: string;
  now: number;
  settings: CommandAuthSettings;
  /** The database the device runs and when its current life began (ms; null when unknown). */
  database?: { id: string; since: number | null };
}

/**
 * The signed fields: version, request id, for this device, database and topic, a body, and the
 * validity window (its length, expiry, before this database's life, issued in the future). Adds
 * every problem; returns the two times read (NaN where unreadable).
 */
export function checkFields(
  fields: Partial<SignedFields>,
  requestId: string | null,
  context: VerifyContext,
  add: (code: EnvelopeErrorCode, message: string) => void,
): { issuedAt: number; expiresAt: number } {
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
  const issuedAt = isoTime(fields.issuedAt);
  const expiresAt = isoTime(fields.expiresAt);
  if (Number.isNaN(issuedAt)) add(EnvelopeErrorCodes.MALFORMED, 'signed.issuedAt: an ISO 8601 time with a zone, e.g. 2026-12-01T21:00:00Z');
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
  return { issuedAt, expiresAt };
}

function isoTime(value: unknown): number {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return Number.NaN;
  return Date.parse(value);
}
