import { describe, expect, it, vi } from 'vitest';
import type { VendRequest } from '../../src/hardware/index.js';
import { type Defer } from '../helpers/cleanup.js';
import { createFakeGpio } from './fakes/fake-gpio.js';
import { fakeTimersPerTest, pulseLow, startedOnFakeGpio } from './fakes/gpio-hardware.js';
import { hardwareSettings } from './fakes/settings.js';

// Pi 5: base 571
const RELAY = 571 + 17;
const PASSAGE = 571 + 22;
const FIRE_ALARM = 571 + 23;

const pass = (): VendRequest => ({ orderId: 7, reference: 'gate-1-1-7', slot: null, amount: 500, currency: 'MNT', mode: 'turnstile' });

async function gate(defer: Defer, options: { passage?: boolean; fireAlarmAtStart?: boolean; mode?: 'turnstile' | 'vending' } = {}) {
  const gpio = createFakeGpio();
  const mode = options.mode ?? 'turnstile';
  const settings = hardwareSettings({
    device: mode === 'turnstile' ? { id: 'gate-1', mode, fare: 500, catalog: [] } : {},
    actuator: { kind: 'relay', relay: { pin: 17, pulseMs: 200 }, turnstile: { passTimeoutMs: 5_000 } },
    inputs: {
      ...(options.passage === false ? {} : { passage: { pin: 22, debounceMs: 20 } }),
      fireAlarm: { pin: 23, activeLow: false, debounceMs: 50 },
    },
  });
  // Inputs idle: passage contact open (pull-up → high, active-low), alarm contact low.
  gpio.setInput(PASSAGE, 1);
  gpio.setInput(FIRE_ALARM, options.fireAlarmAtStart ? 1 : 0);
  return { ...(await startedOnFakeGpio(defer, gpio, settings)), relayLevel: () => gpio.pin(RELAY).level };
}

/** A person walks through: the PASS contact closes for 300 ms. */
const walkThrough = (gpio: ReturnType<typeof createFakeGpio>) => pulseLow(gpio, PASSAGE, 300, 50);

describe('turnstile', () => {
  const defer = fakeTimersPerTest();
  const open = (options: Parameters<typeof gate>[1] = {}) => gate(defer, options);

  it('one pulse opens the gate and a pass confirmed by the sensor is vended', async () => {
    const g = await open();
    const outcome = g.actuator.fire(pass());
    await vi.advanceTimersByTimeAsync(200);
    expect(g.relayLevel()).toBe(1); // pulse over, relay at rest
    await vi.advanceTimersByTimeAsync(1_000);
    await walkThrough(g.gpio);
    await expect(outcome).resolves.toEqual({ result: 'vended', detail: 'pass confirmed by the passage sensor' });
    expect(g.gpio.pin(RELAY).writes.filter((w) => w.level === 0)).toHaveLength(1);
  });

  it('nobody passing within passTimeoutMs is not_passed', async () => {
    const g = await open();
    const outcome = g.actuator.fire(pass());
    await vi.advanceTimersByTimeAsync(5_000);
    await expect(outcome).resolves.toEqual({ result: 'not_passed', detail: 'no pass within 5000 ms' });
  });

  it('a pass during the opening pulse itself counts', async () => {
    const g = await open();
    const outcome = g.actuator.fire(pass());
    await vi.advanceTimersByTimeAsync(50);
    await walkThrough(g.gpio);
    await expect(outcome).resolves.toMatchObject({ result: 'vended' });
  });

  it('a passage edge before the gate opened does not confirm the next pass', async () => {
    const g = await open();
    await walkThrough(g.gpio);
    const outcome = g.actuator.fire(pass());
    await vi.advanceTimersByTimeAsync(5_200);
    await expect(outcome).resolves.toMatchObject({ result: 'not_passed' });
  });

  it('a contact bounce shorter than the debounce is not a pass', async () => {
    const g = await open();
    const outcome = g.actuator.fire(pass());
    await vi.advanceTimersByTimeAsync(300);
    for (let i = 0; i < 3; i++) {
      g.gpio.setInput(PASSAGE, 0);
      await vi.advanceTimersByTimeAsync(5);
      g.gpio.setInput(PASSAGE, 1);
      await vi.advanceTimersByTimeAsync(5);
    }
    await vi.advanceTimersByTimeAsync(5_000);
    await expect(outcome).resolves.toMatchObject({ result: 'not_passed' });
  });

  it('without a passage sensor the opening pulse is the vend', async () => {
    const g = await open({ passage: false });
    const outcome = g.actuator.fire(pass());
    await vi.advanceTimersByTimeAsync(200);
    await expect(outcome).resolves.toEqual({ result: 'vended' });
  });

  it('a fire alarm holds the gate open, is reported, refuses sales, and the gate relocks when it clears', async () => {
    const g = await open();
    g.gpio.setInput(FIRE_ALARM, 1);
    await vi.advanceTimersByTimeAsync(50);
    expect(g.events).toContainEqual({ type: 'fire_alarm', active: true });
    expect(g.relayLevel()).toBe(0); // energised: open
    await expect(g.actuator.fire(pass())).resolves.toMatchObject({ result: 'failed', reason: expect.stringMatching(/fire alarm/) });
    expect(g.relayLevel()).toBe(0);
    g.gpio.setInput(FIRE_ALARM, 0);
    await vi.advanceTimersByTimeAsync(50);
    expect(g.events).toContainEqual({ type: 'fire_alarm', active: false });
    expect(g.relayLevel()).toBe(1);
  });

  it('a fire alarm raised during the opening pulse leaves the gate open after the pulse', async () => {
    const g = await open();
    const outcome = g.actuator.fire(pass());
    await vi.advanceTimersByTimeAsync(20);
    g.gpio.setInput(FIRE_ALARM, 1);
    await vi.advanceTimersByTimeAsync(300);
    expect(g.relayLevel()).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    await outcome;
    expect(g.relayLevel()).toBe(0);
  });

  it('a fire alarm already active at start opens the gate at start and is reported', async () => {
    const g = await open({ fireAlarmAtStart: true });
    expect(g.events).toContainEqual({ type: 'fire_alarm', active: true });
    expect(g.gpio.pin(RELAY).direction).toBe('low');
    expect(g.actuator.health().detail).toMatch(/held open by fire alarm/);
  });

  it('stop under a fire alarm leaves the gate open (its safe state)', async () => {
    const g = await open();
    g.gpio.setInput(FIRE_ALARM, 1);
    await vi.advanceTimersByTimeAsync(50);
    await g.inputs.stop();
    await g.actuator.stop();
    expect(g.relayLevel()).toBe(0);
  });

  it('in a vending machine the fire alarm is reported but never energises the relay', async () => {
    const g = await open({ mode: 'vending', passage: false });
    g.gpio.setInput(FIRE_ALARM, 1);
    await vi.advanceTimersByTimeAsync(50);
    expect(g.events).toContainEqual({ type: 'fire_alarm', active: true });
    expect(g.relayLevel()).toBe(1);
  });
});
