import { ErrorCodes, VendgateError } from '../../util/errors.js';

export type Level = 0 | 1;

/** The part of onoff's `Gpio` we use; tests pass a fake with the same constructor. */
export interface GpioLine {
  readSync(): Level;
  writeSync(value: Level): void;
  watch(callback: (err: Error | null | undefined, value: Level) => void): void;
  unwatchAll(): void;
  unexport(): void;
}

export type GpioConstructor = new (
  gpio: number,
  direction: 'in' | 'out' | 'high' | 'low',
  edge?: 'none' | 'rising' | 'falling' | 'both',
) => GpioLine;

/**
 * Loads onoff only when a GPIO pin is configured, so a laptop or a serial-only machine never needs it.
 * onoff is an optionalDependency: its native part (epoll) may have failed to build.
 */
export async function loadOnoffGpio(): Promise<GpioConstructor> {
  let mod: { Gpio?: unknown; default?: { Gpio?: unknown } };
  try {
    mod = await import('onoff');
  } catch (err) {
    throw new VendgateError(
      ErrorCodes.HARDWARE,
      'the onoff package could not be loaded (it is optional and its native part may have failed to build): run `npm install onoff` on the Pi and look for build errors, or set actuator.relay.driver: gpioset',
      { cause: err },
    );
  }
  const Gpio = (mod.Gpio ?? mod.default?.Gpio) as (GpioConstructor & { accessible?: boolean }) | undefined;
  if (!Gpio) throw new VendgateError(ErrorCodes.HARDWARE, 'the onoff package has no Gpio export: reinstall onoff 6.0.3');
  if (Gpio.accessible === false) {
    throw new VendgateError(
      ErrorCodes.HARDWARE,
      'GPIO is not accessible through /sys/class/gpio: run on a Raspberry Pi, add the service user to the gpio group (SupplementaryGroups=gpio), and do not set ProtectKernelTunables=yes',
    );
  }
  return Gpio;
}
