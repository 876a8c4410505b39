import type { Logger } from '../../util/logger.js';
import { errorMessage } from '../../util/errors.js';
import type { VendOutcome, VendRequest } from '../types.js';
import { SerialLineDownError, type SerialConnection } from './connection.js';
import { waitForLine } from './line-waiter.js';
import {
  CANCEL,
  DISABLED,
  ENABLED,
  INACTIVE,
  OFFLINE,
  SESSION_IDLE,
  VEND_REQUEST,
  VEND_SUCCESS,
  parseMdbAmount,
  formatMdbAmount,
} from './mdb-lines.js';
import { preview } from './templates.js';

/** Between two BEGIN SESSION attempts while the machine has not taken the session (some VMCs need it repeated). */
export const START_REPEAT_MS = 2_000;
const START_ATTEMPTS = 5;

export interface AuthorizeDeps {
  logger: Logger;
  connection: SerialConnection;
  send(command: string): Promise<void>;
  scale: number;
  /** How long the customer has to select once the session runs (our limit; the machine may have its own). */
  selectionTimeoutMs: number;
  /** After the approval: how long the machine may take to report the vend. */
  resultTimeoutMs: number;
  /** A person must see it (the machine reported another item out than the one approved). */
  alarm(name: string, message: string): void;
}

type Seen =
  | { kind: 'started' }
  | { kind: 'request'; amountText: string; item: string }
  | { kind: 'ended'; line: string }
  | { kind: 'success'; item: string | undefined }
  | { kind: 'error'; line: string };

function classify(line: string): Seen | null {
  const request = VEND_REQUEST.exec(line);
  const [, amountText, item] = request ?? [];
  if (amountText !== undefined && item !== undefined) return { kind: 'request', amountText, item };
  if (SESSION_IDLE.test(line)) return { kind: 'started' };
  const success = VEND_SUCCESS.exec(line);
  if (success) return { kind: 'success', item: success[1] };
  if (line.startsWith('c,ERR')) return { kind: 'error', line };
  if (line === INACTIVE || OFFLINE.test(line) || line === DISABLED || line === ENABLED || CANCEL.test(line)) return { kind: 'ended', line };
  return null;
}

/**
 * Authorization first: the customer has paid for `request` on the kiosk. Starts a session with that
 * credit (`C,START,<amount>`, repeated while the machine has not taken it), waits for the machine's
 * vend request, approves it only for the item and price paid for, and reports the vend. Every way
 * out before the approval is `failed` (nothing went out: the payment is refunded once by the vend
 * runner); after the approval, a missing result is `unknown` (a person decides).
 */
export async function authorizeFirst(deps: AuthorizeDeps, request: VendRequest): Promise<VendOutcome> {
  const { logger: log, connection: conn } = deps;
  const credit = formatMdbAmount(request.amount, deps.scale);
  const queue: { seen: Seen; line: string }[] = [];
  let wake: (() => void) | null = null;
  const off = conn.onLine((line) => {
    const seen = classify(line);
    if (!seen) return;
    queue.push({ seen, line });
    wake?.();
  });
  const next = (ms: number) =>
    new Promise<{ seen: Seen; line: string } | null>((resolve) => {
      const ready = queue.shift();
      if (ready) return resolve(ready);
      const timer = setTimeout(() => finish(null), ms);
      function finish(value: { seen: Seen; line: string } | null) {
        clearTimeout(timer);
        wake = null;
        resolve(value);
      }
      wake = () => finish(queue.shift() ?? null);
    });
  const stop = async (why: string, active: boolean): Promise<VendOutcome> => {
    // A stop of a session with no request yet (inactive) is a session cancel; of an active one, a vend denied.
    log.warn({ orderId: request.orderId, why }, active ? 'mdb vend denied' : 'mdb session stopped before a selection');
    await deps.send('C,STOP').catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'C,STOP could not be sent'));
    return { result: 'failed', reason: `${why}: ${active ? 'vend denied' : 'session stopped'} (C,STOP), nothing went out` };
  };

  try {
    let started = false;
    let attempts = 0;
    const deadline = Date.now() + deps.selectionTimeoutMs;
    for (;;) {
      if (!started && attempts < START_ATTEMPTS) {
        attempts++;
        try {
          await deps.send(`C,START,${credit}`);
        } catch (err) {
          if (err instanceof SerialLineDownError) return { result: 'failed', reason: 'serial line down: no session was started' };
          return await stop(`writing C,START failed (${errorMessage(err)})`, false);
        }
        log.info({ orderId: request.orderId, credit, attempt: attempts }, 'mdb session started with the paid credit');
      }
      const left = deadline - Date.now();
      if (left <= 0) return await stop(`no selection within ${Math.round(deps.selectionTimeoutMs / 1000)} s`, false);
      const got = await next(started ? left : Math.min(left, START_REPEAT_MS));
      if (!got) continue;
      const { seen, line } = got;
      if (seen.kind === 'started') {
        started = true;
        continue;
      }
      if (seen.kind === 'ended') {
        if (line === INACTIVE || OFFLINE.test(line)) {
          return { result: 'failed', reason: `the machine or board reset before a selection ("${preview(line)}"): nothing went out` };
        }
        return await stop(`the machine left the session before a selection ("${preview(line)}")`, false);
      }
      if (seen.kind === 'success' || seen.kind === 'error') {
        log.warn({ line: preview(line) }, 'mdb vend result before any approval: ignored for this session');
        continue;
      }
      // A vend request: exactly the item and price paid for, or nothing.
      const asked = parseMdbAmount(seen.amountText, deps.scale);
      if (seen.item !== request.slot || asked !== request.amount) {
        return await stop(
          `the machine asked for item ${preview(seen.item, 20)} at ${seen.amountText}, the customer paid for ${request.slot} at ${credit}`,
          true,
        );
      }
      return await approve(deps, request, seen.amountText);
    }
  } finally {
    off();
  }
}

async function approve(deps: AuthorizeDeps, request: VendRequest, amountText: string): Promise<VendOutcome> {
  const log = deps.logger;
  const waiter = waitForLine<Seen>(
    deps.connection,
    (line) => {
      const seen = classify(line);
      return seen && seen.kind !== 'started' && seen.kind !== 'request' ? seen : null;
    },
    () => {},
  );
  try {
    await deps.send(`C,VEND,${amountText}`);
  } catch (err) {
    waiter.cancel();
    if (err instanceof SerialLineDownError) return { result: 'failed', reason: 'serial line down: the approval was not sent' };
    return { result: 'unknown', detail: `writing C,VEND failed (${errorMessage(err)}): the board may have approved the vend` };
  }
  log.info({ orderId: request.orderId, item: request.slot, amount: request.amount }, 'mdb vend approved');
  const answer = await waiter.arm(deps.resultTimeoutMs);
  if (answer.kind === 'match' && answer.value.kind === 'success') {
    const out = answer.value.item;
    if (out !== undefined && out !== request.slot) otherItemOut(deps, request, out);
    return { result: 'vended', detail: preview(answer.line) };
  }
  if (answer.kind === 'match' && answer.value.kind === 'error')
    return { result: 'failed', reason: `machine reported "${preview(answer.line)}"`, slotFault: true };
  if (answer.kind === 'match')
    return { result: 'unknown', detail: `the session ended ("${preview(answer.line)}") after the approval without a vend result` };
  if (answer.kind === 'down') return { result: 'unknown', detail: 'the serial line went down after the approval was sent' };
  return { result: 'unknown', detail: `no vend result within ${deps.resultTimeoutMs} ms after the approval` };
}

/** The machine reports another item out than the one approved: sold once, charged once, but a person must look. */
export function otherItemOut(deps: Pick<AuthorizeDeps, 'logger' | 'alarm'>, request: VendRequest, out: string): void {
  const message = `the machine reported item ${preview(out, 20)} out for order ${request.orderId}, approved for item ${request.slot}: charged once for ${request.slot}; check the machine's item numbers`;
  deps.logger.error({ orderId: request.orderId, approved: request.slot, out }, 'mdb vend success for another item');
  deps.alarm(`mdb_other_item/${request.orderId}`, message);
}
