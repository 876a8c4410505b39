import { describe, expect, it, vi } from 'vitest';
import { fileURLToPath } from 'node:url';
import { createHardwareBus, createInputs, type HardwareEvent, type HardwareInputs } from '../../src/hardware/index.js';
import { silentLogger, systemClock } from '../../src/util/index.js';
import { createFakeGpio } from './fakes/fake-gpio.js';
import { hardwareSettings } from './fakes/settings.js';
import { fakeTimersPerTest, pulseLow } from './fakes/gpio-hardware.js';

const pi3 = fileURLToPath(new URL('../fixtures/sysfs/pi3', import.meta.url));
const BUTTON = 512 + 5;
const INHIBIT = 512 + 6;

describe('GPIO inputs', () => {
  const defer = fakeTimersPerTest();
  const stopped = (inputs: HardwareInputs) => defer(inputs, (i) => i.stop());

  async function watch(config: Record<string, unknown>) {
    const gpio = createFakeGpio();
    gpio.setInput(BUTTON, 1);
    gpio.setInput(INHIBIT, 1);
    const bus = createHardwareBus();
    const inputs = stopped(
      await createInputs(
        { clock: systemClock, logger: silentLogger(), Gpio: gpio.Gpio, sysfsRoot: pi3, bus },
        hardwareSettings({ inputs: config }),
      ),
    );
    const events: HardwareEvent[] = [];
    inputs.on((event) => events.push(event));
    await inputs.start();
    return { gpio, events, bus, inputs };
  }

  it('a button press emits one button event after the debounce, however much the contact bounces', async () => {
    const { gpio, events } = await watch({ button: { pin: 5, debounceMs: 30 } });
    await pulseLow(gpio, BUTTON, 3, 3); // the contact bounces
    gpio.setInput(BUTTON, 0);
    await vi.advanceTimersByTimeAsync(29);
    expect(events).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(events).toEqual([{ type: 'button' }]);
    gpio.setInput(BUTTON, 1); // release: no event
    await vi.advanceTimersByTimeAsync(30);
    expect(events).toEqual([{ type: 'button' }]);
  });

  it('a spike shorter than the debounce emits nothing', async () => {
    const { gpio, events } = await watch({ button: { pin: 5, debounceMs: 30 } });
    await pulseLow(gpio, BUTTON, 10, 100);
    expect(events).toEqual([]);
  });

  it('inhibit reports active and inactive; activeLow false reads high as active', async () => {
    const { gpio, events } = await watch({ inhibit: { pin: 6, activeLow: false, debounceMs: 0 } });
    expect(events).toEqual([{ type: 'inhibit', active: true }]); // high at start = active, reported at once
    gpio.setInput(INHIBIT, 0);
    gpio.setInput(INHIBIT, 1);
    expect(events).toEqual([
      { type: 'inhibit', active: true },
      { type: 'inhibit', active: false },
      { type: 'inhibit', active: true },
    ]);
  });

  it('read() gives the debounced levels, null for inputs not configured', async () => {
    const { gpio, inputs } = await watch({ button: { pin: 5, debounceMs: 10 } });
    expect(inputs.read()).toEqual({ button: false, inhibit: null, fireAlarm: null, passage: null, delivery: null });
    gpio.setInput(BUTTON, 0);
    await vi.advanceTimersByTimeAsync(10);
    expect(inputs.read()).toMatchObject({ button: true });
  });

  it('stop releases the pins and is safe twice; edges after stop emit nothing', async () => {
    const { gpio, events, inputs } = await watch({ button: { pin: 5, debounceMs: 0 } });
    await inputs.stop();
    await inputs.stop();
    expect(gpio.pin(BUTTON).exported).toBe(false);
    expect(gpio.pin(BUTTON).watchers).toHaveLength(0);
    expect(events).toEqual([]);
  });

  it('with no pin configured, start loads no GPIO library at all', async () => {
    const settings = hardwareSettings();
    const inputs = stopped(
      await createInputs({ clock: systemClock, logger: silentLogger(), sysfsRoot: '/nonexistent', bus: createHardwareBus() }, settings),
    );
    await expect(inputs.start()).resolves.toBeUndefined();
    expect(inputs.read()).toEqual({ button: null, inhibit: null, fireAlarm: null, passage: null, delivery: null });
  });

  it('a pin that cannot be mapped fails start with the input name and what to check', async () => {
    const gpio = createFakeGpio();
    const inputs = stopped(
      await createInputs(
        { clock: systemClock, logger: silentLogger(), Gpio: gpio.Gpio, sysfsRoot: '/nonexistent', bus: createHardwareBus() },
        hardwareSettings({ inputs: { button: { pin: 5 } } }),
      ),
    );
    await expect(inputs.start()).rejects.toThrow(/inputs\.button on BCM 5: no sysfs GPIO at .*driver: gpioset/);
  });

  it('on() also carries what the actuator reports, but never the internal passage edges', async () => {
    const { bus, events } = await watch({});
    bus.emit({ type: 'vend_request', item: '12', amount: 150 });
    bus.emit({ type: 'passage' });
    bus.emit({ type: 'line', up: false, detail: 'unplugged' });
    expect(events).toEqual([
      { type: 'vend_request', item: '12', amount: 150 },
      { type: 'line', up: false, detail: 'unplugged' },
    ]);
  });

  it('after stop, listeners registered with on() hear nothing more (an app restarted on the same settings)', async () => {
    const { bus, events, inputs } = await watch({});
    await inputs.stop();
    bus.emit({ type: 'button' });
    expect(events).toEqual([]);
  });

  it('an alarm the shared bus remembers from an earlier run is cleared when the pin reads inactive at start', async () => {
    const gpio = createFakeGpio();
    gpio.setInput(512 + 23, 0);
    const bus = createHardwareBus();
    bus.emit({ type: 'fire_alarm', active: true });
    const inputs = stopped(
      await createInputs(
        { clock: systemClock, logger: silentLogger(), Gpio: gpio.Gpio, sysfsRoot: pi3, bus },
        hardwareSettings({ inputs: { fireAlarm: { pin: 23, activeLow: false } } }),
      ),
    );
    const events: HardwareEvent[] = [];
    inputs.on((event) => events.push(event));
    await inputs.start();
    expect(events).toEqual([{ type: 'fire_alarm', active: false }]);
    expect(bus.state.fireAlarm).toBe(false);
  });

  it('a listener that throws does not stop the others from hearing the event', async () => {
    const { bus, events, inputs } = await watch({});
    const bad = vi.fn(() => {
      throw new Error('bug in a listener');
    });
    inputs.on(bad);
    inputs.on((event) => events.push(event));
    bus.emit({ type: 'button' });
    expect(bad).toHaveBeenCalled();
    expect(events).toEqual([{ type: 'button' }, { type: 'button' }]);
  });
});
