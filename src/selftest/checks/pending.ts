import type { Settings } from '../../settings/index.js';
import type { Db } from '../../store/index.js';
import type { CheckResult } from '../types.js';
import { pass, warn } from '../helpers.js';

/** An unprocessed webhook younger than this is simply being worked on. */
const WEBHOOK_STALE_MS = 60_000;
/** MQTT messages waiting longer than this mean the broker has not been reached for a while. */
const OUTBOX_STALE_MS = 5 * 60_000;

const NAMES = ['pending.uncertain_vends', 'pending.refunds', 'pending.webhooks', 'pending.outbox', 'pending.alarms'] as const;

function ago(ms: number): string {
  if (ms < 90_000) return `${Math.round(ms / 1000)} s ago`;
  if (ms < 90 * 60_000) return `${Math.round(ms / 60_000)} min ago`;
  if (ms < 48 * 3_600_000) return `${Math.round(ms / 3_600_000)} h ago`;
  return `${Math.round(ms / 86_400_000)} days ago`;
}

function list(ids: (string | number)[], max = 5): string {
  return ids.length > max ? `${ids.slice(0, max).join(', ')} and ${ids.length - max} more` : ids.join(', ');
}

/**
 * Problems waiting for a person or stuck in a queue. They are WARN, never FAIL: the device can still
 * take money, and an update must not roll back because yesterday's vend is still uncertain.
 */
export function checkPending(db: Db | null, settings: Readonly<Settings>, now: number, databaseExists: boolean): CheckResult[] {
  if (!db && !databaseExists) return [pass('pending', 'nothing pending: no database yet')];
  if (!db) return [warn('pending', 'not checked: the database is not available', 'see the database line')];
  const results: CheckResult[] = [];

  const uncertain = db.prepare("SELECT id, reference FROM orders WHERE state = 'vend_uncertain' ORDER BY id").all() as {
    id: number;
    reference: string;
  }[];
  results.push(
    uncertain.length === 0
      ? pass(NAMES[0], 'no uncertain vends')
      : warn(
          NAMES[0],
          `${uncertain.length} order(s) paid with the vend outcome unknown: ${list(uncertain.map((o) => `${o.id} (${o.reference})`))}`,
          `look at the machine (did the customer get it?), then: vendgate resolve ${uncertain[0]!.id} --vended  or  --not-vended (refunds)`,
        ),
  );

  const refunds = db
    .prepare(
      "SELECT order_id, state, updated_at FROM refunds WHERE state IN ('requested', 'sending', 'pending', 'unknown') ORDER BY updated_at",
    )
    .all() as { order_id: number; state: string; updated_at: number }[];
  const alarmMs = settings.provider.refundUnknownAlarmSec * 1000;
  const stuck = refunds.filter((r) => r.state === 'unknown' || now - r.updated_at > alarmMs);
  if (stuck.length > 0) {
    results.push(
      warn(
        NAMES[1],
        `${stuck.length} refund(s) without a confirmed outcome, oldest ${ago(now - stuck[0]!.updated_at)}: orders ${list(stuck.map((r) => r.order_id))}`,
        "the service keeps reading the invoice; if it stays unknown, check the payment in the provider's dashboard before refunding by hand",
      ),
    );
  } else {
    results.push(pass(NAMES[1], refunds.length === 0 ? 'no refunds in progress' : `${refunds.length} refund(s) in progress`));
  }

  const webhooks = db
    .prepare(
      'SELECT count(*) AS n, min(received_at) AS oldest, max(last_error) AS lastError FROM webhook_events WHERE processed_at IS NULL',
    )
    .get() as { n: number; oldest: number | null; lastError: string | null };
  if (webhooks.n > 0 && webhooks.oldest !== null && now - webhooks.oldest > WEBHOOK_STALE_MS) {
    results.push(
      warn(
        NAMES[2],
        `${webhooks.n} webhook event(s) not processed, oldest received ${ago(now - webhooks.oldest)}${webhooks.lastError ? `; last error: ${webhooks.lastError}` : ''}`,
        'the service processes them while it runs and the provider is reachable; journalctl -u vendgate | grep webhook',
      ),
    );
  } else {
    results.push(pass(NAMES[2], webhooks.n === 0 ? 'every webhook event processed' : `${webhooks.n} webhook event(s) being processed`));
  }

  const outbox = db.prepare('SELECT count(*) AS n, min(created_at) AS oldest FROM outbox').get() as { n: number; oldest: number | null };
  const nearFull = outbox.n > settings.mqtt.outboxMaxRows * 0.8;
  if (outbox.n > 0 && (nearFull || (outbox.oldest !== null && now - outbox.oldest > OUTBOX_STALE_MS))) {
    const why = settings.mqtt.url === '' ? 'MQTT is disabled, so nothing publishes them' : 'the broker has not acknowledged them';
    results.push(
      warn(
        NAMES[3],
        `${outbox.n} MQTT message(s) waiting, oldest ${ago(now - (outbox.oldest ?? now))}: ${why}`,
        settings.mqtt.url === ''
          ? 'set mqtt.url to a broker, or ignore: the oldest events are dropped past mqtt.outboxMaxRows'
          : 'see the mqtt line: the device keeps them until the broker is back',
      ),
    );
  } else {
    results.push(pass(NAMES[3], outbox.n === 0 ? 'outbox empty' : `${outbox.n} MQTT message(s) being published`));
  }

  // Uncertain vends have their own line above.
  const alarms = (
    db.prepare('SELECT name, message, raised_at FROM alarms ORDER BY raised_at').all() as {
      name: string;
      message: string;
      raised_at: number;
    }[]
  ).filter((a) => !a.name.startsWith('vend_uncertain/'));
  results.push(
    alarms.length === 0
      ? pass(NAMES[4], 'no open alarms')
      : warn(
          NAMES[4],
          `${alarms.length} open alarm(s): ${list(alarms.map((a) => a.name))} — ${alarms[0]!.message}`,
          'each alarm names what to do; it clears itself when the cause is gone',
        ),
  );
  return results;
}
