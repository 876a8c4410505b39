import type { Settings } from '../settings/index.js';
import { ErrorCodes, VendgateError } from '../util/errors.js';
import { loadOnoffGpio, type GpioConstructor } from './gpio/onoff.js';
import { sysfsNumberForBcm } from './gpio/chip-map.js';

/**
 * The hardware a start cannot do without is missing: which setting needs it, what failed, and what
 * to do. Thrown by `preflightHardware` before the service takes its lock or creates its database, so
 * a GPIO relay configured on a machine without GPIO changes nothing on disk.
 */
export class HardwareStartError extends VendgateError {
  constructor(
    readonly setting: string,
    message: string,
    readonly hint: string,
    options: { cause?: unknown } = {},
  ) {
    super(ErrorCodes.HARDWARE, message, options);
    this.name = 'HardwareStartError';
  }
}

export interface PreflightDeps {
  /** onoff's Gpio constructor (tests pass a fake); default: import('onoff'). */
  Gpio?: GpioConstructor;
  sysfsRoot?: string;
  gpiosetCommand?: string;
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function splitAdvice(message: string): [what: string, advice: string | null] {
  const at = message.indexOf(': ');
  return at < 0 ? [message, null] : [message.slice(0, at), message.slice(at + 2)];
}

async function gpioPin(deps: PreflightDeps, setting: string, bcmPin: number): Promise<void> {
  try {
    if (!deps.Gpio) await loadOnoffGpio();
  } catch (err) {
    // The loader's message is "what: what to do"; the what goes in the sentence, the rest in the hint.
    const [what, advice] = splitAdvice(reason(err));
    throw new HardwareStartError(
      setting,
      `${setting} (BCM ${bcmPin}) needs GPIO, and this machine has none the service can use (${what})`,
      `${advice ? `${advice}; ` : ''}on a machine without GPIO use actuator.kind: sim (the demo) or remove the pin`,
      { cause: err },
    );
  }
  try {
    await sysfsNumberForBcm(bcmPin, deps.sysfsRoot);
  } catch (err) {
    throw new HardwareStartError(
      setting,
      `${setting} (BCM ${bcmPin}) has no GPIO line on this machine: ${reason(err)}`,
      'pins are BCM numbers (GPIO17 is 17), not header positions; check the board and the pin',
      { cause: err },
    );
  }
}

/**
 * Checks, without driving any output, that the GPIO lines the settings name can be opened: onoff
 * loads and GPIO is accessible, each BCM pin maps to a line of the Pi's chip, gpioset runs. A serial
 * port is not checked here: the serial actuator reconnects by itself and raises `serial_line_down`,
 * so a machine switched on after the Pi still works.
 */
export async function preflightHardware(
  deps: PreflightDeps,
  settings: Readonly<Settings>,
  what: { actuator: boolean; inputs: boolean },
): Promise<void> {
  const actuator = settings.actuator;
  if (what.actuator && actuator.kind === 'relay' && actuator.relay.pin !== undefined) {
    if (actuator.relay.driver === 'gpioset') {
      // Reached only by a relay driven through gpioset: other devices never load that driver.
      const { detectGpiosetVersion } = await import('./gpio/gpioset.js');
      try {
        await detectGpiosetVersion(deps.gpiosetCommand);
      } catch (err) {
        throw new HardwareStartError(
          'actuator.relay.driver',
          `actuator.relay.driver is gpioset, and gpioset does not run here: ${reason(err)}`,
          'install the libgpiod tools (sudo apt-get install gpiod) or set actuator.relay.driver: sysfs',
          { cause: err },
        );
      }
    } else {
      await gpioPin(deps, 'actuator.relay.pin', actuator.relay.pin);
    }
  }
  if (!what.inputs) return;
  for (const [name, input] of Object.entries(settings.inputs)) {
    if (input?.pin !== undefined) await gpioPin(deps, `inputs.${name}.pin`, input.pin);
  }
}
