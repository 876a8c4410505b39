import type { Settings } from '../settings/index.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { INPUT_NAMES, mdbScale } from '../settings/sections/actuator.js';
import type { Actuator, HardwareInputs } from './types.js';
import type { MachineSimulator, MachineSimulatorOptions } from './machine-simulator.js';
import { withDeliveryConfirmation } from './delivery.js';
import { busForSettings, type HardwareBus } from './bus.js';
import { createGpioInputs } from './inputs.js';
import { loadOnoffGpio, type GpioConstructor, type Level } from './gpio/onoff.js';
import { sysfsNumberForBcm } from './gpio/chip-map.js';
import type { DigitalOutput } from './gpio/output.js';
import type { SerialBinding } from './serial/connection.js';

export * from './types.js';
export type { SimFailMode } from './sim.js';
export { withDeliveryConfirmation } from './delivery.js';
export { createHardwareBus, type HardwareBus, type BusEvent } from './bus.js';
export { checkHardware, type HardwareCheck } from './checks.js';
export { preflightHardware, HardwareStartError } from './preflight.js';
export type { MachineSimulator, MachineSimulatorOptions } from './machine-simulator.js';
export type { GpioConstructor, GpioLine } from './gpio/onoff.js';
export type { SerialBinding } from './serial/connection.js';

/** `vendgate simulate-machine`: the machine simulator, loaded by the command that runs it, never by `start`. */
export async function runMachineSimulator(options: MachineSimulatorOptions): Promise<MachineSimulator> {
  return (await import('./machine-simulator.js')).runMachineSimulator(options);
}

export interface HardwareDeps {
  clock: Clock;
  logger: Logger;
  /**
   * Joins the actuator and the inputs (MDB vend requests and serial line changes reach
   * `inputs.on`; the turnstile hears the passage sensor and the fire alarm). Default: one bus per
   * settings object, so createActuator and createInputs called with the same settings share it.
   */
  bus?: HardwareBus;
  /** sysfs root for the GPIO chip lookup; tests point it at test/fixtures/sysfs/<board>. */
  sysfsRoot?: string;
  /** onoff's Gpio constructor; tests pass a fake. Default: import('onoff') when a pin is first used. */
  Gpio?: GpioConstructor;
  /** serialport binding; tests pass @serialport/binding-mock's MockBinding. */
  serialBinding?: SerialBinding;
  /** The gpioset executable; tests pass a fake script. */
  gpiosetCommand?: string;
  /** MDB: items the machine may ask for, looked up at each request (the live catalog). Default: device.catalog's slots. */
  knownItems?: { has(item: string): boolean };
}

function hardwareLogger(deps: HardwareDeps): Logger {
  return deps.logger.child({ module: 'hardware' });
}

/** Throws when the relay pin is also an input pin (inputs among themselves are checked by the schema). */
export function assertNoPinConflicts(settings: Readonly<Settings>): void {
  if (settings.actuator.kind !== 'relay') return;
  const relayPin = settings.actuator.relay.pin;
  for (const name of INPUT_NAMES) {
    if (settings.inputs[name]?.pin === relayPin) {
      throw new VendgateError(
        ErrorCodes.CONFIG_INVALID,
        `inputs.${name}.pin: BCM ${relayPin} is already actuator.relay.pin — an input and the relay need different pins`,
      );
    }
  }
}

async function gpioFor(deps: HardwareDeps): Promise<GpioConstructor> {
  return deps.Gpio ?? loadOnoffGpio();
}

/**
 * Builds the actuator named by `actuator.kind`. Each kind's code is reached by import() here, as the
 * payment adapters are: a relay device never loads the serial and MDB drivers (~60 KB of source V8
 * keeps resident once loaded), a serial one never loads the relay's. Native modules are loaded only
 * for the kind in use, at start().
 */
export async function createActuator(deps: HardwareDeps, settings: Readonly<Settings>): Promise<Actuator> {
  const logger = hardwareLogger(deps);
  const bus = deps.bus ?? busForSettings(settings, logger);
  const actuator = settings.actuator;
  const deliverySensor =
    settings.device.mode === 'vending' && (settings.inputs.delivery !== undefined || (actuator.kind === 'sim' && actuator.sim.dropSensor));
  const withDelivery = (inner: Actuator): Actuator =>
    deliverySensor ? withDeliveryConfirmation(inner, { bus, logger }, { windowMs: actuator.deliveryWindowMs }) : inner;
  switch (actuator.kind) {
    case 'sim': {
      // The simulated machine (demo, tests) is loaded only when configured, as the real kinds' modules are.
      const { createSimActuator } = await import('./sim.js');
      return withDelivery(createSimActuator({ clock: deps.clock, bus }, actuator.sim));
    }
    case 'relay': {
      assertNoPinConflicts(settings);
      const relay = actuator.relay;
      const pin = relay.pin!; // the schema requires it for kind relay
      const { createRelayActuator } = await import('./relay.js');
      const openOutput = async (initialLevel: Level): Promise<DigitalOutput> => {
        if (relay.driver === 'gpioset') {
          const { openGpiosetOutput } = await import('./gpio/gpioset.js');
          return openGpiosetOutput({ command: deps.gpiosetCommand, chip: relay.chip ?? 'gpiochip0', offset: pin, initialLevel, logger });
        }
        const Gpio = await gpioFor(deps);
        const { number } = await sysfsNumberForBcm(pin, deps.sysfsRoot);
        const { openSysfsOutput } = await import('./gpio/output.js');
        return openSysfsOutput(Gpio, number, initialLevel);
      };
      return withDelivery(
        createRelayActuator(
          { logger, bus, openOutput },
          {
            relay,
            turnstile: actuator.turnstile,
            mode: settings.device.mode,
            passageConfigured: settings.inputs.passage !== undefined,
            vendTimeoutMs: actuator.vendTimeoutMs,
          },
        ),
      );
    }
    case 'serial': {
      const serial = actuator.serial;
      const { createSerialConnection } = await import('./serial/connection.js');
      const connection = createSerialConnection({
        path: serial.path!,
        baudRate: serial.baudRate,
        binding: deps.serialBinding,
        reconnectMaxMs: serial.reconnectMaxMs,
        logger,
      });
      if (serial.profile === 'mdb') {
        const knownItems = deps.knownItems ?? new Set(settings.device.catalog.map((item) => item.slot));
        const scale = mdbScale(actuator, settings.device.currency);
        const { createMdbSerialActuator } = await import('./serial/mdb-profile.js');
        return withDelivery(
          createMdbSerialActuator({ logger, bus, connection, knownItems, scale, currency: settings.device.currency }, serial),
        );
      }
      const { createLineSerialActuator } = await import('./serial/line-profile.js');
      return withDelivery(createLineSerialActuator({ clock: deps.clock, logger, bus, connection }, serial));
    }
  }
}

/**
 * Builds the configured inputs (button, inhibit, fire alarm, passage). `on()` also carries what the
 * actuator reports (serial line up/down, MDB vend requests and cancels). No pin configured → onoff
 * is never loaded.
 */
export async function createInputs(deps: HardwareDeps, settings: Readonly<Settings>): Promise<HardwareInputs> {
  const logger = hardwareLogger(deps);
  const bus = deps.bus ?? busForSettings(settings, logger);
  assertNoPinConflicts(settings);
  return createGpioInputs(
    {
      logger,
      bus,
      async openInput(bcmPin) {
        const Gpio = await gpioFor(deps);
        const { number } = await sysfsNumberForBcm(bcmPin, deps.sysfsRoot);
        return new Gpio(number, 'in', 'both');
      },
    },
    settings.inputs,
  );
}

/** Both at once, sharing one bus. */
export async function createHardware(
  deps: HardwareDeps,
  settings: Readonly<Settings>,
): Promise<{ actuator: Actuator; inputs: HardwareInputs; bus: HardwareBus }> {
  const bus = deps.bus ?? busForSettings(settings, hardwareLogger(deps));
  const withBus = { ...deps, bus };
  return { actuator: await createActuator(withBus, settings), inputs: await createInputs(withBus, settings), bus };
}
