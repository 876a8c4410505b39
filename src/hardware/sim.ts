import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Actuator, VendOutcome, VendRequest } from './types.js';
import type { Clock } from '../util/clock.js';
import type { HardwareBus } from './bus.js';
import { sleep } from '../util/clock.js';

export type SimFailMode = 'none' | 'fail' | 'nak' | 'timeout' | 'hang' | 'not_passed' | 'no_drop';

export interface SimActuatorSettings {
  logPath: string;
  durationMs: number;
  failMode: SimFailMode;
  /** Share of actuations that fail as failMode says (`fail` when none); undefined → all of them. */
  failRate?: number;
  failSeed?: number;
  /** Slots whose motor is jammed: every vend there fails, nothing comes out. */
  jamSlots?: string[];
  /** The chute has a delivery sensor: a delivered item emits a drop on the bus (`no_drop`: none). */
  dropSensor?: boolean;
}

/** mulberry32: a small seeded generator, so a soak run's machine failures replay with its seed. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The simulated machine. Every actuation appends one JSON line to `logPath`: that file is the
 * physical truth tests and operators read. A failed, refused (nak) or not-passed vend writes no line
 * (nothing came out); `timeout` is the machine that vends but never answers: it writes the line and
 * reports `unknown`, the case where refunding would be wrong. A hang never returns, so the runner's
 * timeout decides. `no_drop` (and a slot in jamSlots with a jam) is the machine whose motor turns
 * with nothing coming out: it writes no line, and with dropSensor it reports no drop either.
 */
export function createSimActuator(
  deps: { clock: Clock; bus?: HardwareBus },
  settings: SimActuatorSettings,
): Actuator & { setFailMode(mode: SimFailMode): void } {
  let failMode = settings.failMode;
  let started = false;
  const draw = seededRandom(settings.failSeed ?? 1);
  const modeForThisVend = (): SimFailMode => {
    if (settings.failRate === undefined) return failMode;
    return draw() < settings.failRate ? (failMode === 'none' ? 'fail' : failMode) : 'none';
  };
  return {
    kind: 'sim',
    async start() {
      mkdirSync(dirname(settings.logPath), { recursive: true });
      started = true;
    },
    async fire(request: VendRequest): Promise<VendOutcome> {
      if (!started) return { result: 'failed', reason: 'actuator not started' };
      const jammed = request.slot !== null && (settings.jamSlots ?? []).includes(request.slot);
      const mode = jammed ? 'fail' : modeForThisVend();
      if (settings.durationMs > 0) await sleep(settings.durationMs);
      switch (mode) {
        case 'fail':
          return {
            result: 'failed',
            reason: jammed ? `simulated motor jam in slot ${request.slot}` : 'simulated motor jam',
            slotFault: true,
          };
        // The motor turned and the machine thinks it vended; nothing fell (no line: nothing came out).
        case 'no_drop':
          return { result: 'vended', detail: 'simulated: motor turned' };
        case 'nak':
          return { result: 'failed', reason: 'machine answered "NAK" (simulated)', slotFault: true };
        case 'hang':
          return new Promise<VendOutcome>(() => {});
        case 'not_passed':
          return { result: 'not_passed', detail: 'simulated: nobody passed' };
        case 'timeout':
        case 'none':
          break;
      }
      const line = {
        orderId: request.orderId,
        reference: request.reference,
        slot: request.slot,
        amount: request.amount,
        at: new Date(deps.clock.now()).toISOString(),
      };
      appendFileSync(settings.logPath, `${JSON.stringify(line)}\n`);
      if (settings.dropSensor) deps.bus?.emit({ type: 'drop' });
      if (mode === 'timeout') return { result: 'unknown', detail: 'simulated: command sent, no answer from the machine' };
      return { result: 'vended' };
    },
    health() {
      return { ok: started, detail: started ? `simulated, log ${settings.logPath}` : 'not started' };
    },
    setFailMode(mode) {
      failMode = mode;
    },
    async stop() {
      started = false;
    },
  };
}
