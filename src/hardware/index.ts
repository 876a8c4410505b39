import type { Settings } from '../settings/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Actuator, HardwareInputs } from './types.js';
import { createSimActuator } from './sim.js';

export * from './types.js';
export { createSimActuator, type SimFailMode } from './sim.js';

export interface HardwareDeps {
  clock: Clock;
  logger: Logger;
}

/** Builds the actuator named by `actuator.kind`. Native modules are loaded only for the kind in use. */
export async function createActuator(deps: HardwareDeps, settings: Readonly<Settings>): Promise<Actuator> {
  switch (settings.actuator.kind) {
    case 'sim':
      return createSimActuator(deps, settings.actuator.sim);
    default:
      throw new Error(`actuator.kind ${settings.actuator.kind} is not available in this build`);
  }
}

/** Builds the configured inputs (button, inhibit, fire alarm, passage). None configured → no-op inputs. */
export async function createInputs(_deps: HardwareDeps, _settings: Readonly<Settings>): Promise<HardwareInputs> {
  const listeners: ((event: never) => void)[] = [];
  return {
    async start() {},
    on(listener) { listeners.push(listener as never); },
    read() { return {}; },
    async stop() {},
  };
}
