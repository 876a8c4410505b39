import type { Logger } from '../util/logger.js';
import type { HardwareEvent } from './types.js';

/**
 * Events inside hardware/: everything the core hears, plus the edges only an actuator needs
 * (passage for the turnstile, drop for the delivery sensor in a vending machine's chute).
 */
export type BusEvent = HardwareEvent | { type: 'passage' } | { type: 'drop' };

/** Bus events the core never hears: they confirm a vend inside hardware/. */
export const ACTUATOR_ONLY_EVENTS: ReadonlySet<BusEvent['type']> = new Set(['passage', 'drop']);

/**
 * Joins the actuator and the inputs without the core wiring them: the serial actuator's vend
 * requests and line changes reach the core through `HardwareInputs.on`, and the turnstile relay
 * hears the passage sensor and the fire alarm the inputs watch.
 */
export interface HardwareBus {
  emit(event: BusEvent): void;
  /** Returns the unsubscribe function. */
  subscribe(listener: (event: BusEvent) => void): () => void;
  /** Last known levels, so a late subscriber (the relay at start) sees an alarm already active. */
  readonly state: { fireAlarm: boolean; inhibit: boolean; inputsRunning: boolean; line: boolean | null };
  setInputsRunning(running: boolean): void;
}

export function createHardwareBus(logger?: Logger): HardwareBus {
  const listeners = new Set<(event: BusEvent) => void>();
  const state = { fireAlarm: false, inhibit: false, inputsRunning: false, line: null as boolean | null };
  return {
    state,
    emit(event) {
      if (event.type === 'fire_alarm') state.fireAlarm = event.active;
      if (event.type === 'inhibit') state.inhibit = event.active;
      if (event.type === 'line') state.line = event.up;
      for (const listener of [...listeners]) {
        // A listener's bug must not stop the relay from hearing the fire alarm.
        try {
          listener(event);
        } catch (err) {
          logger?.error({ err, event: event.type }, 'hardware event listener threw');
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    setInputsRunning(running) {
      state.inputsRunning = running;
    },
  };
}

const busesBySettings = new WeakMap<object, HardwareBus>();

/** The bus shared by createActuator and createInputs called with the same (frozen) settings object. */
export function busForSettings(settings: object, logger?: Logger): HardwareBus {
  let bus = busesBySettings.get(settings);
  if (!bus) {
    bus = createHardwareBus(logger);
    busesBySettings.set(settings, bus);
  }
  return bus;
}
