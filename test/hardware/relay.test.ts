import { describe, expect, it, vi } from 'vitest';
import { fileURLToPath } from 'node:url';
import { createActuator, createHardwareBus, type VendRequest } from '../../src/hardware/index.js';
import { silentLogger, systemClock } from '../../src/util/index.js';
import { createFakeGpio } from './fakes/fake-gpio.js';
import { hardwareSettings } from './fakes/settings.js';
import { fakeTimersPerTest } from './fakes/gpio-hardware.js';

const pi4 = fileURLToPath(new URL('../fixtures/sysfs/pi4', import.meta.url));
const SYSFS_17 = 529; // BCM 17 on a Pi 4 with kernel ≥ 6.6

const request = (overrides: Partial<VendRequest> = {}): VendRequest => ({
  orderId: 1,
  reference: 'test-1-1-1',
  slot: 'A1',
  amount: 150,
  currency: 'MNT',
  mode: 'vending',
  ...overrides,
});

/** Levels written after start, with times relative to `t0`. */
function trace(writes: { level: 0 | 1; at: number }[], t0: number) {
  return writes.map((w) => [w.level, w.at - t0]);
}

describe('GPIO relay', () => {
  const defer = fakeTimersPerTest();

  /** A relay actuator on a fake GPIO (not started yet); stopped after the test, on the test's fake timers. */
  async function relayWith(relay: Record<string, unknown>, extra: { vendTimeoutMs?: number } = {}) {
    const gpio = createFakeGpio();
    const settings = hardwareSettings({ actuator: { kind: 'relay', relay: { pin: 17, ...relay }, ...extra } });
    const actuator = await createActuator(
      { clock: systemClock, logger: silentLogger(), Gpio: gpio.Gpio, sysfsRoot: pi4, bus: createHardwareBus() },
      settings,
    );
    return { gpio, actuator: defer(actuator, (a) => a.stop()) };
  }

  it('constructing the actuator touches no pin; start exports the pin already at the safe level (active-low: high)', async () => {
    const { gpio, actuator: relay } = await relayWith({});
    expect(gpio.pins.size).toBe(0);
    await relay.start();
    const pin = gpio.pin(SYSFS_17);
    expect(pin.direction).toBe('high');
    expect(pin.level).toBe(1);
    expect(relay.health().ok).toBe(true);
  });

  it('an active-low relay is energised by driving the pin low for exactly pulseMs', async () => {
    const { gpio, actuator: relay } = await relayWith({ pulseMs: 300 });
    await relay.start();
    const t0 = Date.now();
    const outcome = relay.fire(request());
    await vi.advanceTimersByTimeAsync(300);
    await expect(outcome).resolves.toEqual({ result: 'vended' });
    expect(trace(gpio.pin(SYSFS_17).writes, t0)).toEqual([
      [1, 0],
      [0, 0],
      [1, 300],
    ]);
  });

  it('an active-high relay board gets the inverted levels: low at rest, high while pulsing', async () => {
    const { gpio, actuator: relay } = await relayWith({ activeLow: false, pulseMs: 200 });
    await relay.start();
    const t0 = Date.now();
    const outcome = relay.fire(request());
    await vi.advanceTimersByTimeAsync(200);
    await outcome;
    expect(gpio.pin(SYSFS_17).direction).toBe('low');
    expect(trace(gpio.pin(SYSFS_17).writes, t0)).toEqual([
      [0, 0],
      [1, 0],
      [0, 200],
    ]);
  });

  it('a coin-pulse machine gets amount / creditPerPulse pulses with gapMs between them', async () => {
    const { gpio, actuator: relay } = await relayWith({ creditPerPulse: 50, pulseMs: 100, gapMs: 60, activeLow: false });
    await relay.start();
    const t0 = Date.now();
    const outcome = relay.fire(request({ amount: 250 }));
    await vi.advanceTimersByTimeAsync(5 * 100 + 4 * 60);
    await expect(outcome).resolves.toMatchObject({ result: 'vended', detail: '5 pulses' });
    expect(trace(gpio.pin(SYSFS_17).writes, t0)).toEqual([
      [0, 0],
      [1, 0],
      [0, 100],
      [1, 160],
      [0, 260],
      [1, 320],
      [0, 420],
      [1, 480],
      [0, 580],
      [1, 640],
      [0, 740],
    ]);
  });

  it('a price that is not a whole number of pulses fails without touching the pin', async () => {
    const { gpio, actuator: relay } = await relayWith({ creditPerPulse: 100 });
    await relay.start();
    await expect(relay.fire(request({ amount: 150 }))).resolves.toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(/not a whole number of pulses at creditPerPulse 100/),
    });
    expect(gpio.pin(SYSFS_17).writes).toHaveLength(1);
  });

  it('a pulse train longer than vendTimeoutMs is refused before the first pulse', async () => {
    const { gpio, actuator: relay } = await relayWith({ creditPerPulse: 1, pulseMs: 100, gapMs: 100 }, { vendTimeoutMs: 30_000 });
    await relay.start();
    await expect(relay.fire(request({ amount: 500 }))).resolves.toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(/500 pulses take 100000 ms.*nothing was sent/),
    });
    expect(gpio.pin(SYSFS_17).writes).toHaveLength(1);
  });

  it('an error driving the first pulse is a failed vend and the relay stays at rest', async () => {
    const { gpio, actuator: relay } = await relayWith({});
    await relay.start();
    gpio.pin(SYSFS_17).failNextWrite = new Error('EIO');
    await expect(relay.fire(request())).resolves.toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(/before the first pulse: EIO/),
    });
    expect(gpio.pin(SYSFS_17).level).toBe(1);
  });

  it('an error in the middle of a pulse train is unknown (credit was partly given) and the relay goes back to rest', async () => {
    const { gpio, actuator: relay } = await relayWith({ creditPerPulse: 50, pulseMs: 100, gapMs: 100 });
    await relay.start();
    const outcome = relay.fire(request({ amount: 250 }));
    await vi.advanceTimersByTimeAsync(350); // two pulses given, in the gap before the third
    gpio.pin(SYSFS_17).failNextWrite = new Error('EIO');
    await vi.advanceTimersByTimeAsync(100);
    await expect(outcome).resolves.toEqual({ result: 'unknown', detail: 'vend interrupted after 2 of 5 pulses: EIO' });
    expect(gpio.pin(SYSFS_17).level).toBe(1);
  });

  it('stop during a pulse drops the relay at once and reports the vend as unknown; stop twice is safe', async () => {
    const { gpio, actuator: relay } = await relayWith({ pulseMs: 5_000 });
    await relay.start();
    const outcome = relay.fire(request());
    await vi.advanceTimersByTimeAsync(100);
    expect(gpio.pin(SYSFS_17).level).toBe(0);
    await relay.stop();
    await relay.stop();
    expect(gpio.pin(SYSFS_17).level).toBe(1);
    expect(gpio.pin(SYSFS_17).exported).toBe(false);
    await expect(outcome).resolves.toEqual({
      result: 'unknown',
      detail: 'vend interrupted after 1 of 1 pulses: stopped during the pulse train',
    });
  });

  it('fire before start, or while another vend runs, sends nothing', async () => {
    const { gpio, actuator: relay } = await relayWith({});
    await expect(relay.fire(request())).resolves.toMatchObject({ result: 'failed', reason: 'relay not started' });
    await relay.start();
    const first = relay.fire(request());
    await expect(relay.fire(request({ orderId: 2 }))).resolves.toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(/another vend/),
    });
    await vi.advanceTimersByTimeAsync(300);
    await first;
    expect(gpio.pin(SYSFS_17).writes.filter((w) => w.level === 0)).toHaveLength(1);
  });

  it('the relay pin on an input pin is refused with both names', async () => {
    const settings = hardwareSettings({ actuator: { kind: 'relay', relay: { pin: 17 } }, inputs: { button: { pin: 17 } } });
    await expect(createActuator({ clock: systemClock, logger: silentLogger() }, settings)).rejects.toThrow(
      /inputs\.button\.pin: BCM 17 is already actuator\.relay\.pin/,
    );
  });
});
