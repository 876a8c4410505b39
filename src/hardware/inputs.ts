import type { Logger } from '../util/logger.js';
import { ErrorCodes, VendgateError, errorMessage } from '../util/errors.js';
import { INPUT_NAMES, type InputName, type InputsSettings } from '../settings/sections/actuator.js';
import { ACTUATOR_ONLY_EVENTS, type BusEvent, type HardwareBus } from './bus.js';
import type { GpioLine, Level } from './gpio/onoff.js';
import type { HardwareEvent, HardwareInputs } from './types.js';

export interface GpioInputsDeps {
  logger: Logger;
  bus: HardwareBus;
  /** Opens a BCM pin as an input watching both edges (sysfs mapping done by the caller). */
  openInput(bcmPin: number): Promise<GpioLine>;
}

interface WatchedInput {
  name: InputName;
  line: GpioLine;
  activeLow: boolean;
  debounceMs: number;
  /** Debounced level: true = active. */
  active: boolean;
  timer: ReturnType<typeof setTimeout> | null;
}

/** What each input tells the rest of the system when its debounced level changes. */
function eventFor(name: InputName, active: boolean): BusEvent | null {
  switch (name) {
    case 'button':
      return active ? { type: 'button' } : null;
    case 'passage':
      return active ? { type: 'passage' } : null;
    case 'delivery':
      return active ? { type: 'drop' } : null;
    case 'inhibit':
      return { type: 'inhibit', active };
    case 'fireAlarm':
      return { type: 'fire_alarm', active };
  }
}

/**
 * The GPIO inputs (button, inhibit, fire alarm, passage, delivery) with our own debounce: an edge restarts a
 * timer and the level read when it runs out decides, so contact bounce and short spikes emit nothing.
 * `on()` also hears what the actuator reports through the bus (serial line, MDB vend requests).
 */
export function createGpioInputs(deps: GpioInputsDeps, settings: InputsSettings): HardwareInputs {
  const log = deps.logger;
  const watched: WatchedInput[] = [];
  /** Listeners registered with on(): removed at stop, so a stopped app hears nothing more. */
  const subscriptions: (() => void)[] = [];
  let started = false;

  const isActive = (input: { activeLow: boolean }, level: Level) => (level === 1) !== input.activeLow;

  function settle(input: WatchedInput): void {
    input.timer = null;
    let level: Level;
    try {
      level = input.line.readSync();
    } catch (err) {
      log.error({ err, input: input.name }, 'input read failed');
      return;
    }
    const active = isActive(input, level);
    if (active === input.active) return;
    input.active = active;
    log.info({ input: input.name, active }, 'input changed');
    const event = eventFor(input.name, active);
    if (event) deps.bus.emit(event);
  }

  function onEdge(input: WatchedInput, err: Error | null | undefined): void {
    if (err) {
      log.error({ err, input: input.name }, 'input watch error');
      return;
    }
    if (input.timer) clearTimeout(input.timer);
    if (input.debounceMs === 0) settle(input);
    else input.timer = setTimeout(() => settle(input), input.debounceMs);
  }

  async function release(): Promise<void> {
    for (const input of watched.splice(0)) {
      if (input.timer) clearTimeout(input.timer);
      try {
        input.line.unwatchAll();
        input.line.unexport();
      } catch (err) {
        log.warn({ err, input: input.name }, 'input release failed');
      }
    }
  }

  return {
    async start() {
      if (started) return;
      try {
        for (const name of INPUT_NAMES) {
          const config = settings[name];
          if (!config) continue;
          let line: GpioLine;
          try {
            line = await deps.openInput(config.pin);
          } catch (err) {
            throw new VendgateError(ErrorCodes.HARDWARE, `cannot open inputs.${name} on BCM ${config.pin}: ${errorMessage(err)}`, {
              cause: err,
            });
          }
          const input: WatchedInput = {
            name,
            line,
            activeLow: config.activeLow,
            debounceMs: config.debounceMs,
            active: false,
            timer: null,
          };
          input.active = isActive(input, line.readSync());
          watched.push(input);
          line.watch((err) => onEdge(input, err));
        }
      } catch (err) {
        await release();
        throw err;
      }
      started = true;
      deps.bus.setInputsRunning(true);
      for (const input of watched) {
        log.info({ input: input.name, active: input.active }, 'input watched');
        if (input.name !== 'fireAlarm' && input.name !== 'inhibit') continue;
        // An alarm or inhibit already active must stop sales now, not at its next edge; one the bus
        // still remembers from an earlier run but that has cleared must release the gate.
        const remembered = input.name === 'fireAlarm' ? deps.bus.state.fireAlarm : deps.bus.state.inhibit;
        if (input.active || remembered) deps.bus.emit(eventFor(input.name, input.active)!);
      }
    },
    on(listener) {
      subscriptions.push(
        deps.bus.subscribe((event) => {
          if (!ACTUATOR_ONLY_EVENTS.has(event.type)) listener(event as HardwareEvent);
        }),
      );
    },
    read() {
      const levels: Record<string, boolean | null> = {};
      for (const name of INPUT_NAMES) {
        const input = watched.find((w) => w.name === name);
        levels[name] = input ? input.active : null;
      }
      if (deps.bus.state.line !== null) levels.serialLine = deps.bus.state.line;
      return levels;
    },
    async stop() {
      for (const unsubscribe of subscriptions.splice(0)) unsubscribe();
      if (!started) return;
      started = false;
      deps.bus.setInputsRunning(false);
      await release();
    },
  };
}
