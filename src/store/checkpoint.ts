import type { Db } from './open.js';
import type { Logger } from '../util/logger.js';

/**
 * WAL checkpoints off the request path. SQLite's automatic checkpoint runs inside whichever commit
 * pushes the WAL past 1,000 pages: that commit (a webhook's, a vend claim's) then waits while
 * thousands of pages are copied into the database file and synced — the latency spikes of the
 * webhook benchmark. Here the service's connection turns the automatic checkpoint off and this
 * timer checkpoints instead:
 *
 * - when the database has been quiet (no change by this connection) for one tick — on a vending
 *   machine that is nearly always, so the copy happens between customers;
 * - or, under sustained writes, once `maxChangesBetween` rows have changed since the last one, so
 *   the WAL stays bounded however busy the device is (and its file is cut back to 8 MB afterwards).
 *
 * PASSIVE: it never waits for a reader or blocks a writer. Nothing here affects durability: a
 * commit is durable in the WAL (synchronous=NORMAL, FULL for `durably()`), and a crash with a long
 * WAL is recovered by SQLite on the next open. Fewer, larger checkpoints also rewrite the same
 * pages of the database file less often, which an SD card's wear appreciates.
 */

/** The WAL file is truncated to this after a checkpoint (SQLite otherwise keeps it at its largest). */
const WAL_SIZE_LIMIT_BYTES = 8 * 1024 * 1024;

export interface CheckpointSettings {
  /** How often to look. Default 250 ms. */
  intervalMs?: number;
  /**
   * Row changes after which a checkpoint runs even though writes keep coming. Default 2,000: about
   * 3,000 WAL pages (12 MB) in the webhook benchmark, a checkpoint of ~10 ms.
   */
  maxChangesBetween?: number;
  /**
   * How long the database must have been quiet before a checkpoint. Default one tick; the service
   * waits a minute, so that a run of sales costs one checkpoint. Durability does not depend on it:
   * the money steps' commits are synced into the WAL itself.
   */
  quietMs?: number;
  /**
   * Rows that must have changed since the last checkpoint before a quiet one runs. Default 1 (any
   * change). The service waits for a few hundred: on a machine whose customers come minutes apart
   * every quiet spell would otherwise cost one checkpoint (three syncs, the WAL restart included) per
   * order, more than the order's own durable commits. The WAL stays synced by those commits meanwhile.
   */
  quietMinChanges?: number;
  /** Called after each checkpoint (the lineage mark follows the database's progress). */
  onCheckpoint?: () => void;
}

export interface CheckpointResult {
  /** Frames in the WAL and frames now copied into the database file. */
  walFrames: number;
  checkpointed: number;
  /** Why it ran. */
  reason: 'quiet' | 'bound';
}

export interface Checkpointer {
  /** Turns the connection's automatic checkpoint off and starts the timer (unref'd). Idempotent. */
  start(): void;
  /** Stops the timer. The last checkpoint happens when the connection is closed. */
  stop(): void;
  /** One look: checkpoints when due and returns what it did, or null (tests call this directly). */
  tick(): CheckpointResult | null;
}

export function createCheckpointer(deps: { db: Db; logger: Logger }, settings: CheckpointSettings = {}): Checkpointer {
  const { db } = deps;
  const log = deps.logger.child({ module: 'store' });
  const intervalMs = settings.intervalMs ?? 250;
  const maxChangesBetween = settings.maxChangesBetween ?? 2_000;
  const quietMinChanges = Math.max(1, settings.quietMinChanges ?? 1);
  // Quiet for this many ticks in a row before a checkpoint: one checkpoint (two syncs) for a whole
  // run of sales instead of one per order.
  const quietTicks = Math.max(1, Math.ceil((settings.quietMs ?? intervalMs) / intervalMs));
  let quietFor = 0;
  const totalChanges = db.prepare('SELECT total_changes() AS n');
  const changes = () => (totalChanges.get() as { n: number }).n;
  let timer: NodeJS.Timeout | null = null;
  let atLastTick = 0;
  let atLastCheckpoint = 0;

  function tick(): CheckpointResult | null {
    const now = changes();
    quietFor = now === atLastTick ? quietFor + 1 : 0;
    atLastTick = now;
    if (now === atLastCheckpoint) return null;
    // atLastCheckpoint is -1 at start: whatever an earlier run left is checkpointed at the first quiet tick.
    const enoughForQuiet = atLastCheckpoint < 0 || now - atLastCheckpoint >= quietMinChanges;
    const reason = quietFor >= quietTicks && enoughForQuiet ? 'quiet' : now - atLastCheckpoint >= maxChangesBetween ? 'bound' : null;
    if (reason === null) return null;
    const [row] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    const walFrames = row?.log ?? 0;
    const checkpointed = row?.checkpointed ?? 0;
    // A reader (a CLI command) still using older pages stops a PASSIVE checkpoint short: try again next tick.
    if (checkpointed >= walFrames) atLastCheckpoint = now;
    settings.onCheckpoint?.();
    return { walFrames, checkpointed, reason };
  }

  return {
    start() {
      if (timer) return;
      db.pragma('wal_autocheckpoint = 0');
      // After a burst, the WAL file is cut back to this when it is next reused, not left at its peak.
      db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
      atLastTick = changes();
      // Whatever an earlier run or a CLI command left in the WAL goes at the first quiet tick.
      atLastCheckpoint = -1;
      timer = setInterval(() => {
        try {
          tick();
        } catch (err) {
          // A busy or failing checkpoint is retried at the next tick; the WAL only grows meanwhile.
          log.warn({ err }, 'WAL checkpoint failed; will retry');
        }
      }, intervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
    },
    tick,
  };
}
