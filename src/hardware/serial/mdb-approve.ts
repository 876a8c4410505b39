import type { Logger } from '../../util/logger.js';
import { errorMessage } from '../../util/errors.js';
import type { VendOutcome, VendRequest } from '../types.js';
import { SerialLineDownError, type SerialConnection } from './connection.js';
import { waitForLine } from './line-waiter.js';
import { CANCEL, DISABLED, ENABLED, INACTIVE, OFFLINE, SESSION_IDLE, VEND_SUCCESS } from './mdb-lines.js';
import { preview } from './templates.js';

export interface ApproveDeps {
  logger: Logger;
  connection: SerialConnection;
  send(command: string): Promise<void>;
  resultTimeoutMs: number;
  /** False once the machine ended the session this approval is for. */
  isCurrent(): boolean;
}

/**
 * Always idle: the paid order's request is approved with the machine's own amount text
 * (`C,VEND,<amount>`), then the vend result is awaited. Before the approval leaves, a failure is
 * `failed` (nothing went out); after it, a missing result is `unknown` (a person decides).
 */
export async function approveRequest(
  deps: ApproveDeps,
  request: VendRequest,
  current: { item: string; amount: number; amountText: string },
): Promise<VendOutcome> {
  const { logger: log, connection: conn } = deps;
  if (!conn.up && !(await conn.waitUntilUp(deps.resultTimeoutMs))) {
    return { result: 'failed', reason: `serial line down: the approval was not sent (${conn.detail})` };
  }
  if (!deps.isCurrent()) return { result: 'failed', reason: 'the machine ended the vend session before the approval: nothing was sent' };
  type Answer = 'success' | 'error' | 'ended';
  const waiter = waitForLine<Answer>(
    conn,
    (line) => {
      if (VEND_SUCCESS.test(line)) return 'success';
      if (line.startsWith('c,ERR')) return 'error';
      if (line === INACTIVE || OFFLINE.test(line) || line === ENABLED || line === DISABLED || CANCEL.test(line)) return 'ended';
      return null;
    },
    (line) => {
      if (!SESSION_IDLE.test(line) && !line.startsWith('r,'))
        log.warn({ line: preview(line) }, 'unrecognised line during mdb vend ignored');
    },
  );
  try {
    await deps.send(`C,VEND,${current.amountText}`);
  } catch (err) {
    waiter.cancel();
    if (err instanceof SerialLineDownError) return { result: 'failed', reason: 'serial line down: the approval was not sent' };
    return { result: 'unknown', detail: `writing C,VEND failed (${errorMessage(err)}): the board may have approved the vend` };
  }
  log.info({ orderId: request.orderId, item: current.item, amount: current.amount }, 'mdb vend approved');
  const answer = await waiter.arm(deps.resultTimeoutMs);
  if (answer.kind === 'match' && answer.value === 'success') return { result: 'vended', detail: preview(answer.line) };
  if (answer.kind === 'match' && answer.value === 'error')
    return { result: 'failed', reason: `machine reported "${preview(answer.line)}"`, slotFault: true };
  if (answer.kind === 'match')
    return { result: 'unknown', detail: `the session ended ("${preview(answer.line)}") after the approval without a vend result` };
  if (answer.kind === 'down') return { result: 'unknown', detail: 'the serial line went down after the approval was sent' };
  return { result: 'unknown', detail: `no vend result within ${deps.resultTimeoutMs} ms after the approval` };
}
