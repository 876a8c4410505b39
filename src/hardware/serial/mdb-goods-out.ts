import type { Logger } from '../../util/logger.js';
import { preview } from './templates.js';

/** A second VEND SUCCESS this soon after an approved vend's is the same vend reported twice. */
const DUPLICATE_WINDOW_MS = 10_000;
/** A success this soon after a deny is named as following it. */
const AFTER_DENY_MS = 120_000;

/**
 * Tells a VEND SUCCESS that no approval of ours explains (goods out unpaid: an alarm) from the same
 * paid vend reported twice (nothing to do).
 */
export function createGoodsOutWatch(deps: { logger: Logger; alarm(name: string, message: string): void }) {
  const now = () => performance.now();
  let lastDeniedAt = -Infinity;
  let lastVendedAt = -Infinity;
  return {
    denied() {
      lastDeniedAt = now();
    },
    vended() {
      lastVendedAt = now();
    },
    /** A VEND SUCCESS while no approval of ours waits for one. */
    successOutsideApproval(line: string): void {
      if (now() - lastVendedAt < DUPLICATE_WINDOW_MS && lastVendedAt >= lastDeniedAt) {
        deps.logger.info({ line: preview(line) }, 'mdb vend success reported again for the vend just done: ignored');
        return;
      }
      const afterDeny = now() - lastDeniedAt < AFTER_DENY_MS;
      const message = `the machine reported goods out ("${preview(line)}") without an approval${afterDeny ? ' after a deny' : ''}: unpaid — check the machine`;
      deps.logger.error({ line: preview(line) }, 'mdb goods out unpaid');
      deps.alarm('mdb_goods_out_unpaid', message);
    },
  };
}
