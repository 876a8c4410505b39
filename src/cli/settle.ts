import { loadSettings } from '../settings/index.js';
import { openDatabase } from '../store/index.js';
import { createOrderRepository } from '../orders/index.js';
import { createOutbox } from '../outbox/index.js';
import { createCaseSettlement, CASE_OUTCOMES } from '../ledger/index.js';
import { systemClock } from '../util/clock.js';
import { createLogger } from '../util/logger.js';
import { type CliIo, EXIT, print, UsageError } from './io.js';
import { providerForCli } from './replay.js';

/**
 * `vendgate settle CASE OUTCOME [--json]`: a person settles a parked case (ledger/settle.ts) — the
 * alarm's name, and what they found. Safe while the service runs: the database takes one writer at
 * a time, and a refund is claimed on disk before it is sent. A second run answers the same, and
 * sends nothing again.
 */
export async function settleCommand(
  options: { config?: string; case?: string; outcome?: string; json?: boolean },
  io: CliIo,
): Promise<number> {
  if (!options.case || !options.outcome)
    throw new UsageError(
      `usage: vendgate settle CASE OUTCOME (CASE: the alarm's name, e.g. orphan_invoice/pi_…; OUTCOME: one of ${CASE_OUTCOMES.join(', ')})`,
    );
  const { settings } = loadSettings({ path: options.config, env: io.env });
  const db = openDatabase(settings.storage.path);
  const { provider, close } = await providerForCli(settings, io);
  try {
    const outbox = createOutbox({ db, clock: systemClock, deviceId: settings.device.id });
    const cases = createCaseSettlement({
      db,
      clock: systemClock,
      logger: createLogger({ level: 'warn', destination: io.stderr }),
      outbox,
      provider,
      orders: createOrderRepository({ db, clock: systemClock }),
    });
    const answer = await cases.settle(options.case, options.outcome, 'cli');
    if (options.json) print(io.stdout, JSON.stringify(answer));
    else
      print(
        io.stdout,
        `${answer.case}: ${answer.outcome} — ${answer.detail}${answer.again ? ' (settled before: nothing done again)' : ''}` +
          (answer.state === 'unknown' ? '\nthe refund is not confirmed yet: check it at the provider, then run this again' : ''),
      );
    return answer.state === 'done' ? EXIT.OK : EXIT.FAILURE;
  } finally {
    close();
    db.close();
  }
}
