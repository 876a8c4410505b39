import type { Settings } from '../settings/index.js';
import { errorMessage } from '../util/errors.js';
import { fsPromises } from '../util/lazy-builtins.js';
import { INPUT_NAMES } from '../settings/sections/actuator.js';
import { sysfsNumberForBcm } from './gpio/chip-map.js';
import { loadOnoffGpio } from './gpio/onoff.js';

export interface HardwareCheck {
  name: string;
  ok: boolean;
  /** What was found, or what to check. */
  detail: string;
}

export interface HardwareCheckDeps {
  sysfsRoot?: string;
  /** Skip loading onoff (tests with a fake Gpio). */
  skipOnoff?: boolean;
  gpiosetCommand?: string;
}

async function check(name: string, run: () => Promise<string>): Promise<HardwareCheck> {
  try {
    return { name, ok: true, detail: await run() };
  } catch (err) {
    return { name, ok: false, detail: errorMessage(err) };
  }
}

/**
 * For the selftest: looks at the configured hardware without touching it (no pin is exported or
 * driven, no port opened). A missing device or an unmapped pin fails with what to check.
 */
export async function checkHardware(deps: HardwareCheckDeps, settings: Readonly<Settings>): Promise<HardwareCheck[]> {
  const checks: HardwareCheck[] = [];
  const actuator = settings.actuator;
  const pins: { name: string; pin: number }[] = [];
  if (actuator.kind === 'relay' && actuator.relay.pin !== undefined) {
    if (actuator.relay.driver === 'gpioset') {
      const { detectGpiosetVersion } = await import('./gpio/gpioset.js'); // as createActuator: only a gpioset relay loads it
      checks.push(
        await check(
          'relay gpioset',
          async () =>
            `libgpiod v${await detectGpiosetVersion(deps.gpiosetCommand)}, chip ${actuator.relay.chip ?? 'gpiochip0'} line ${actuator.relay.pin}`,
        ),
      );
    } else {
      pins.push({ name: 'actuator.relay.pin', pin: actuator.relay.pin });
    }
  }
  for (const name of INPUT_NAMES) {
    const input = settings.inputs[name];
    if (input) pins.push({ name: `inputs.${name}.pin`, pin: input.pin });
  }
  if (pins.length > 0 && !deps.skipOnoff) {
    checks.push(
      await check('onoff', async () => {
        await loadOnoffGpio();
        return 'onoff loaded, /sys/class/gpio accessible';
      }),
    );
  }
  for (const { name, pin } of pins) {
    checks.push(
      await check(name, async () => {
        const { number, chip } = await sysfsNumberForBcm(pin, deps.sysfsRoot);
        return `BCM ${pin} → sysfs gpio${number} on ${chip.label} (base ${chip.base})`;
      }),
    );
  }
  if (actuator.kind === 'serial' && actuator.serial.path) {
    const path = actuator.serial.path;
    checks.push(
      await check('actuator.serial.path', async () => {
        let info;
        try {
          info = await fsPromises().stat(path);
        } catch (err) {
          throw new Error(
            `${path} does not exist (${(err as NodeJS.ErrnoException).code}): check the USB cable and the name (ls /dev/serial/by-id/ /dev/ttyUSB* /dev/ttyAMA*)`,
          );
        }
        if (!info.isCharacterDevice())
          throw new Error(`${path} is not a serial device: point actuator.serial.path at the /dev entry of the adapter`);
        return `${path} present (${actuator.serial.profile} profile, ${actuator.serial.baudRate} baud)`;
      }),
    );
  }
  return checks;
}
