import { durably, prepared, type Db } from '../../store/index.js';
import type { VerifiedCommand } from './envelope.js';

export interface CommandRequestRow {
  request_id: string;
  command: string;
  key_id: string;
  digest: string;
  issued_at: number;
  expires_at: number;
  received_at: number;
  order_id: number | null;
  outcome: string | null;
  finished_at: number | null;
}

/**
 * The SQL of `command_requests` (migration 006): every request id of a verified command, written
 * before it runs. Claiming commits at synchronous=FULL: a test vend or a refund may follow at once,
 * and a power cut must not forget that the request id was used.
 */
export interface CommandRecord {
  /** Records the request before it runs; returns the earlier row instead when the id was seen before. */
  claim(
    command: string,
    verified: VerifiedCommand,
    now: number,
    orderId: number | null,
  ): { fresh: true } | { fresh: false; row: CommandRequestRow };
  /** Stores the answer that was sent (a replay gets it again). */
  finish(requestId: string, outcome: unknown, now: number): void;
  get(requestId: string): CommandRequestRow | undefined;
}

export function createCommandRecord(db: Db): CommandRecord {
  const get = (requestId: string) =>
    prepared(db, 'SELECT * FROM command_requests WHERE request_id = ?').get(requestId) as CommandRequestRow | undefined;
  return {
    get,
    claim(command, verified, now, orderId) {
      return durably(
        db,
        () => {
          const earlier = get(verified.requestId);
          if (earlier) return { fresh: false as const, row: earlier };
          prepared(
            db,
            `INSERT INTO command_requests (request_id, command, key_id, digest, issued_at, expires_at, received_at, order_id)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(verified.requestId, command, verified.keyId, verified.digest, verified.issuedAt, verified.expiresAt, now, orderId);
          return { fresh: true as const };
        },
        'command_claim',
      );
    },
    finish(requestId, outcome, now) {
      prepared(db, 'UPDATE command_requests SET outcome = ?, finished_at = ? WHERE request_id = ?').run(
        JSON.stringify(outcome),
        now,
        requestId,
      );
    },
  };
}
