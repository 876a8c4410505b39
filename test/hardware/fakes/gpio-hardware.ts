import { fileURLToPath } from 'node:url';
import { beforeEach, vi } from 'vitest';
import { createHardware, type HardwareEvent } from '../../../src/hardware/index.js';
import type { Settings } from '../../../src/settings/index.js';
import { silentLogger, systemClock } from '../../../src/util/index.js';
import { cleanup, type Defer } from '../../helpers/cleanup.js';
import type { createFakeGpio } from './fake-gpio.js';

/** A Raspberry Pi 5's sysfs: its GPIO chip's base is 571. */
export const PI5_SYSFS = fileURLToPath(new URL('../../fixtures/sysfs/pi5', import.meta.url));

/**
 * Fake timers for each test of the calling scope, real ones again after it; returns the scope's
 * `defer` (test/helpers/cleanup.ts), whose closers run before the timers are real again.
 */
export function fakeTimersPerTest(): Defer {
  const defer = cleanup();
  beforeEach(() => {
    vi.useFakeTimers();
    defer(vi, (v) => v.useRealTimers());
  });
  return defer;
}

/** The hardware on the fake GPIO, inputs and actuator started, with every input event it emitted; both stopped after the test. */
export async function startedOnFakeGpio(defer: Defer, gpio: ReturnType<typeof createFakeGpio>, settings: Readonly<Settings>) {
  const hardware = await createHardware({ clock: systemClock, logger: silentLogger(), Gpio: gpio.Gpio, sysfsRoot: PI5_SYSFS }, settings);
  const events: HardwareEvent[] = [];
  hardware.inputs.on((event) => events.push(event));
  await hardware.inputs.start();
  await hardware.actuator.start();
  defer(hardware, async (h) => {
    await h.inputs.stop();
    await h.actuator.stop();
  });
  return { gpio, ...hardware, events };
}

/** An active-low input held low for `heldMs`, then high again, then `settleMs` more of (fake) time. */
export async function pulseLow(gpio: ReturnType<typeof createFakeGpio>, pin: number, heldMs: number, settleMs: number): Promise<void> {
  gpio.setInput(pin, 0);
  await vi.advanceTimersByTimeAsync(heldMs);
  gpio.setInput(pin, 1);
  await vi.advanceTimersByTimeAsync(settleMs);
}
