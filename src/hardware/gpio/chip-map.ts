import { join } from 'node:path';
import { ErrorCodes, VendgateError } from '../../util/errors.js';
import { fsPromises } from '../../util/lazy-builtins.js';

/** Labels of the SoC GPIO controller on the Pi 3 / Zero 2 W, Pi 4 and Pi 5 (the 40-pin header lives there). */
export const PI_GPIO_CHIP_LABELS = ['pinctrl-bcm2835', 'pinctrl-bcm2711', 'pinctrl-rp1'] as const;

export interface SysfsGpioChip {
  /** Directory name, e.g. gpiochip512. */
  name: string;
  label: string;
  base: number;
  ngpio: number;
}

/** Every chip under <sysfsRoot>/class/gpio. Unreadable entries are skipped. */
export async function listSysfsGpioChips(sysfsRoot: string): Promise<SysfsGpioChip[]> {
  const dir = join(sysfsRoot, 'class', 'gpio');
  let names: string[];
  try {
    names = await fsPromises().readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new VendgateError(
      ErrorCodes.HARDWARE,
      `no sysfs GPIO at ${dir} (${code}): this kernel has no /sys/class/gpio — set actuator.relay.driver: gpioset (apt install gpiod), or check that this is a Raspberry Pi`,
      { cause: err },
    );
  }
  const chips: SysfsGpioChip[] = [];
  for (const name of names.filter((n) => n.startsWith('gpiochip')).sort()) {
    try {
      const read = (file: string) =>
        fsPromises()
          .readFile(join(dir, name, file), 'utf8')
          .then((text) => text.trim());
      const [label, base, ngpio] = await Promise.all([read('label'), read('base'), read('ngpio')]);
      chips.push({ name, label, base: Number(base), ngpio: Number(ngpio) });
    } catch {
      // A chip directory without label/base/ngpio is not one we can use.
    }
  }
  return chips;
}

/** The SoC chip that carries the header pins. `raspberrypi-exp-gpio` (firmware expander) is never it. */
export async function findPiGpioChip(sysfsRoot = '/sys'): Promise<SysfsGpioChip> {
  const chips = await listSysfsGpioChips(sysfsRoot);
  const chip = chips.find((c) => (PI_GPIO_CHIP_LABELS as readonly string[]).includes(c.label) && Number.isInteger(c.base));
  if (!chip) {
    const found = chips.map((c) => `${c.name} "${c.label}"`).join(', ') || 'none';
    throw new VendgateError(
      ErrorCodes.HARDWARE,
      `no Raspberry Pi GPIO chip (${PI_GPIO_CHIP_LABELS.join(', ')}) under ${join(sysfsRoot, 'class', 'gpio')}; found: ${found}. Check the board (cat /sys/kernel/debug/gpio, gpiodetect)`,
    );
  }
  return chip;
}

/**
 * The kernel's sysfs number for a BCM pin: chip base + BCM number (512 + 17 = 529 on a Pi 4 with
 * kernel ≥ 6.6). A plain BCM number fails with EINVAL on current kernels.
 */
export async function sysfsNumberForBcm(bcmPin: number, sysfsRoot = '/sys'): Promise<{ number: number; chip: SysfsGpioChip }> {
  const chip = await findPiGpioChip(sysfsRoot);
  if (!Number.isInteger(bcmPin) || bcmPin < 0 || bcmPin >= chip.ngpio) {
    throw new VendgateError(
      ErrorCodes.HARDWARE,
      `BCM pin ${bcmPin} does not exist on ${chip.label} (${chip.ngpio} lines): use the BCM number of a header pin (0–27)`,
    );
  }
  return { number: chip.base + bcmPin, chip };
}
