import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { findPiGpioChip, sysfsNumberForBcm } from '../../src/hardware/gpio/chip-map.js';

const fixture = (board: string) => fileURLToPath(new URL(`../fixtures/sysfs/${board}`, import.meta.url));

describe('GPIO chip mapping (BCM number → sysfs number by chip label)', () => {
  it.each([
    ['pi3', 'pinctrl-bcm2835', 529],
    ['pi4', 'pinctrl-bcm2711', 529],
    ['pi5', 'pinctrl-rp1', 588],
    ['old-kernel', 'pinctrl-bcm2711', 17],
  ])('on %s BCM 17 maps through %s to gpio%i', async (board, label, expected) => {
    const { number, chip } = await sysfsNumberForBcm(17, fixture(board));
    expect(chip.label).toBe(label);
    expect(number).toBe(expected);
  });

  it('ignores the firmware expander raspberrypi-exp-gpio and the Pi 5 brcmstb chips', async () => {
    expect((await findPiGpioChip(fixture('pi4'))).name).toBe('gpiochip512');
    expect((await findPiGpioChip(fixture('pi5'))).name).toBe('gpiochip571');
  });

  it('maps BCM 0 and BCM 27, the ends of the header, on a Pi 4', async () => {
    expect((await sysfsNumberForBcm(0, fixture('pi4'))).number).toBe(512);
    expect((await sysfsNumberForBcm(27, fixture('pi4'))).number).toBe(539);
  });

  it('refuses a line the chip does not have, naming the BCM pin', async () => {
    await expect(sysfsNumberForBcm(60, fixture('pi4'))).rejects.toThrow(/BCM pin 60 does not exist on pinctrl-bcm2711/);
  });

  it('on a machine without a Pi GPIO chip says which chips it found and how to look', async () => {
    await expect(findPiGpioChip(fixture('no-pi'))).rejects.toThrow(/found: gpiochip0 "INT34C5:00".*gpiodetect/);
  });

  it('without /sys/class/gpio points at the gpioset driver', async () => {
    await expect(findPiGpioChip(fixture('does-not-exist'))).rejects.toThrow(/driver: gpioset/);
  });
});
