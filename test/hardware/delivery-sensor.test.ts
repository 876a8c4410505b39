import { describe, expect, it, vi } from 'vitest';
import type { VendRequest } from '../../src/hardware/index.js';
import { type Defer } from '../helpers/cleanup.js';
import { createFakeGpio } from './fakes/fake-gpio.js';
import { fakeTimersPerTest, pulseLow, startedOnFakeGpio } from './fakes/gpio-hardware.js';
import { hardwareSettings } from './fakes/settings.js';

const RELAY = 571 + 17;
const BEAM = 571 + 24;

const vend = (): VendRequest => ({ orderId: 3, reference: 'vm-1-1-3', slot: 'A1', amount: 1500, currency: 'MNT', mode: 'vending' });

/** A relay vending machine with an IR beam in the chute on BCM 24 (active-low: the beam breaks → low). */
async function machine(defer: Defer, deliveryWindowMs = 2_000) {
  const gpio = createFakeGpio();
  const settings = hardwareSettings({
    actuator: { kind: 'relay', relay: { pin: 17, pulseMs: 200 }, deliveryWindowMs },
    inputs: { delivery: { pin: 24, debounceMs: 10 } },
  });
  gpio.setInput(BEAM, 1);
  return startedOnFakeGpio(defer, gpio, settings);
}

/** An item falls through the beam: it breaks for 30 ms. */
const itemFalls = (gpio: ReturnType<typeof createFakeGpio>) => pulseLow(gpio, BEAM, 30, 20);

describe('delivery sensor on a relay vending machine (vend-detect)', () => {
  const defer = fakeTimersPerTest();
  const start = (windowMs?: number) => machine(defer, windowMs);

  it('a drop after the pulse, within the window, is a delivered vend', async () => {
    const m = await start();
    const outcome = m.actuator.fire(vend());
    await vi.advanceTimersByTimeAsync(200);
    await vi.advanceTimersByTimeAsync(500);
    await itemFalls(m.gpio);
    await expect(outcome).resolves.toMatchObject({ result: 'vended', detail: expect.stringMatching(/drop seen by the delivery sensor/) });
    expect(m.gpio.pin(RELAY).writes.filter((w) => w.level === 0)).toHaveLength(1);
  });

  it('a drop while the motor still turns counts: the sensor is watched before the pulse', async () => {
    const m = await start();
    const outcome = m.actuator.fire(vend());
    await vi.advanceTimersByTimeAsync(100);
    await itemFalls(m.gpio);
    await vi.advanceTimersByTimeAsync(200);
    await expect(outcome).resolves.toMatchObject({ result: 'vended' });
  });

  it('no drop within the window is a failed vend (nothing came out: the core refunds)', async () => {
    const m = await start(1_000);
    const outcome = m.actuator.fire(vend());
    await vi.advanceTimersByTimeAsync(200 + 1_000);
    await expect(outcome).resolves.toEqual({
      result: 'failed',
      reason: expect.stringMatching(/no drop at the delivery sensor within 1000 ms/),
      slotFault: true,
    });
  });

  it('a drop of an earlier vend, before this one fired, does not confirm it', async () => {
    const m = await start(1_000);
    await itemFalls(m.gpio);
    const outcome = m.actuator.fire(vend());
    await vi.advanceTimersByTimeAsync(200 + 1_000);
    await expect(outcome).resolves.toMatchObject({ result: 'failed' });
  });

  it('the drop edges stay inside hardware/: the core hears no event for them', async () => {
    const m = await start();
    await itemFalls(m.gpio);
    expect(m.events).toEqual([]);
    expect(m.inputs.read()).toMatchObject({ delivery: false });
  });

  it('stopping while waiting for the drop is unknown, never a refund', async () => {
    const m = await start(5_000);
    const outcome = m.actuator.fire(vend());
    await vi.advanceTimersByTimeAsync(300);
    const stopping = m.actuator.stop();
    await vi.advanceTimersByTimeAsync(10);
    await stopping;
    await expect(outcome).resolves.toMatchObject({ result: 'unknown' });
  });
});

describe('delivery sensor settings', () => {
  it('is for vending machines; the sim actuator simulates it with sim.dropSensor instead of a pin', async () => {
    const { parseSettings } = await import('../../src/settings/index.js');
    expect(() =>
      parseSettings({
        device: { id: 'g', mode: 'turnstile', fare: 5 },
        actuator: { kind: 'relay', relay: { pin: 17 } },
        inputs: { delivery: { pin: 24 } },
      }),
    ).toThrow(/inputs\.delivery: the delivery sensor confirms vends in vending mode/);
    expect(() =>
      parseSettings({ device: { id: 'v', catalog: [{ slot: 'A1', name: 'W', price: 1 }] }, inputs: { delivery: { pin: 24 } } }),
    ).toThrow(/use actuator\.sim\.dropSensor: true/);
  });
});
