import type { Logger } from '../util/logger.js';
import type { HardwareBus } from './bus.js';
import type { Actuator, VendOutcome } from './types.js';

export interface DeliveryConfirmationOptions {
  /** After the machine's own "vended": how long a drop may take to be seen. */
  windowMs: number;
}

/**
 * Vend-detect: wraps any vending actuator (relay, serial, sim) so that "the machine says it vended"
 * becomes "an item fell past the delivery sensor". The drop listener is armed before the actuator
 * fires (a fast item can fall while the motor still turns); after the machine answers `vended`, a
 * drop must be seen within `windowMs`. No drop is `failed`: this time the device knows nothing came
 * out, so the runner refunds (or voids a held authorization). The machine's own failures pass through
 * unchanged; `unknown` stays unknown: a sensor's silence cannot settle a command left unanswered.
 */
export function withDeliveryConfirmation(
  inner: Actuator,
  deps: { bus: HardwareBus; logger: Logger },
  options: DeliveryConfirmationOptions,
): Actuator {
  const log = deps.logger;
  let stopping: AbortController = new AbortController();

  function armDropWatch(): { wait(ms: number): Promise<'drop' | 'timeout' | 'stopped'>; cancel(): void } {
    let seen = false;
    let wake: ((why: 'drop' | 'stopped') => void) | null = null;
    const off = deps.bus.subscribe((event) => {
      if (event.type !== 'drop') return;
      seen = true;
      wake?.('drop');
    });
    return {
      wait(ms) {
        if (seen) return Promise.resolve('drop');
        return new Promise((resolve) => {
          const signal = stopping.signal;
          const timer = setTimeout(() => finish('timeout'), ms);
          const onStop = () => finish('stopped');
          signal.addEventListener('abort', onStop, { once: true });
          function finish(why: 'drop' | 'timeout' | 'stopped') {
            clearTimeout(timer);
            signal.removeEventListener('abort', onStop);
            wake = null;
            resolve(why);
          }
          wake = finish;
        });
      },
      cancel: off,
    };
  }

  return {
    ...inner,
    async start() {
      stopping = new AbortController();
      await inner.start();
    },
    async fire(request): Promise<VendOutcome> {
      const watch = armDropWatch();
      try {
        const outcome = await inner.fire(request);
        if (outcome.result !== 'vended') return outcome;
        const seen = await watch.wait(options.windowMs);
        if (seen === 'drop')
          return { result: 'vended', detail: ['drop seen by the delivery sensor', outcome.detail].filter(Boolean).join('; ') };
        if (seen === 'stopped')
          return { result: 'unknown', detail: 'stopped while waiting for the delivery sensor: the drop could not be watched' };
        log.warn(
          { orderId: request.orderId, slot: request.slot, windowMs: options.windowMs },
          'machine reported a vend but the delivery sensor saw no drop',
        );
        return {
          result: 'failed',
          reason: `no drop at the delivery sensor within ${options.windowMs} ms (the machine said: ${outcome.detail ?? 'vended'})`,
          slotFault: true,
        };
      } finally {
        watch.cancel();
      }
    },
    health() {
      const health = inner.health();
      return { ok: health.ok, detail: `${health.detail}; delivery sensor confirms vends within ${options.windowMs} ms` };
    },
    async stop() {
      stopping.abort();
      await inner.stop();
    },
  };
}
