import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/index.js';
import { createFakeGpio } from '../hardware/fakes/fake-gpio.js';
import { createMockSerial } from '../hardware/fakes/mock-serial.js';

import { byName, deviceConfig, failing, fakeExec, selftestFor } from './harness.js';
import { waitFor } from '../helpers/wait.js';

const PI4 = new URL('../fixtures/sysfs/pi4', import.meta.url).pathname;
const NO_PI = new URL('../fixtures/sysfs/no-pi', import.meta.url).pathname;
// BCM 17 and 27 on a Pi 4 with a 6.6 kernel: chip base 512.
const RELAY_SYSFS = 512 + 17;
const PASSAGE_SYSFS = 512 + 27;

async function relayDevice(extra: Record<string, unknown> = {}) {
  const device = await deviceConfig({
    actuator: { kind: 'relay', relay: { pin: 17, activeLow: true, pulseMs: 10, gapMs: 10 } },
    inputs: { passage: { pin: 27, activeLow: true } },
    ...extra,
  });
  openDatabase(device.dbPath).close();
  return device;
}

describe('GPIO, serial and inputs', () => {
  it('relay: the pin is found on the chip, exported and driven to its safe level; the inputs show their levels', async () => {
    const device = await relayDevice();
    const gpio = createFakeGpio();
    gpio.setInput(PASSAGE_SYSFS, 0);

    const { report } = await selftestFor(device.path, {}, { hardware: { sysfsRoot: PI4, Gpio: gpio.Gpio } });
    const checks = byName(report.checks);

    expect(failing(report.checks)).toEqual([]);
    expect(checks.gpio!.detail).toMatch(/BCM 17 → sysfs gpio529 on pinctrl-bcm2711 \(base 512\); exported and driven to the safe level/);
    // Active-low board: high is open. Driven open at start and again at stop, never closed.
    expect(gpio.pin(RELAY_SYSFS).writes.map((w) => w.level)).toEqual([1, 1]);
    expect(checks.inputs).toMatchObject({ status: 'PASS', detail: 'passage ACTIVE' });
  });

  it('relay on a machine without the Pi GPIO chip: FAIL gpio with what to check, nothing driven', async () => {
    const device = await relayDevice();
    const gpio = createFakeGpio();

    const { report } = await selftestFor(device.path, {}, { hardware: { sysfsRoot: NO_PI, Gpio: gpio.Gpio } });

    expect(failing(report.checks)).toEqual(['gpio', 'inputs']);
    expect(byName(report.checks).gpio!.hint).toMatch(/BCM number.*gpio group/);
    expect(gpio.pins.has(RELAY_SYSFS)).toBe(false);
  });

  it('beside a running service the pins are only looked up, never exported or driven', async () => {
    const device = await relayDevice();
    const gpio = createFakeGpio();

    const { report } = await selftestFor(
      device.path,
      {},
      { hardware: { sysfsRoot: PI4, Gpio: gpio.Gpio }, exec: fakeExec({ systemdActive: true }) },
    );

    expect(byName(report.checks).gpio!.detail).toMatch(/in use by the running service/);
    expect(gpio.pins.size).toBe(0);
  });

  it('--actuate pulses the relay once and leaves it at the safe level', async () => {
    const device = await relayDevice({ inputs: {} });
    const gpio = createFakeGpio();

    const { report } = await selftestFor(device.path, { actuate: true }, { hardware: { sysfsRoot: PI4, Gpio: gpio.Gpio } });

    expect(byName(report.checks).actuate).toMatchObject({ status: 'PASS' });
    // One closing (low) between open levels: one pulse, and the relay ends open.
    const levels = gpio.pin(RELAY_SYSFS).writes.map((w) => w.level);
    expect(levels.filter((level) => level === 0)).toHaveLength(1);
    expect(levels[0]).toBe(1);
    expect(levels.at(-1)).toBe(1);
  });

  it('--actuate is refused while the service holds the hardware', async () => {
    const device = await relayDevice({ inputs: {} });
    const gpio = createFakeGpio();

    const { report } = await selftestFor(
      device.path,
      { actuate: true },
      { hardware: { sysfsRoot: PI4, Gpio: gpio.Gpio }, exec: fakeExec({ systemdActive: true }) },
    );

    expect(byName(report.checks).actuate).toMatchObject({ status: 'FAIL', detail: 'not done: the running service holds the hardware' });
    expect(gpio.pins.size).toBe(0);
  });

  it('sim --actuate writes exactly one line to the simulated machine, marked as the selftest', async () => {
    const device = await deviceConfig();

    const { report } = await selftestFor(device.path, { actuate: true });

    expect(byName(report.checks).actuate).toMatchObject({ status: 'PASS' });
    const lines = readFileSync(device.simLog, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { reference: string; slot: string });
    expect(lines).toEqual([expect.objectContaining({ reference: 'selftest', slot: 'A1' })]);
  });

  it('without --actuate nothing moves', async () => {
    const device = await deviceConfig();

    const { report } = await selftestFor(device.path);

    expect(byName(report.checks).actuate).toBeUndefined();
    expect(existsSync(device.simLog)).toBe(false);
  });

  it('serial with a status command: PASS when the machine answers it, FAIL with wiring hints when it stays silent', async () => {
    const serial = { path: '/dev/null', profile: 'line', statusCommand: 'STATUS\r\n', timeoutMs: 300 };
    const device = await deviceConfig({ actuator: { kind: 'serial', serial } });

    const answering = createMockSerial('/dev/null');
    const machine = (async () => {
      await waitFor(() => answering.written().includes('STATUS'), { what: 'the status command' });
      answering.emit('NONE\r\n');
    })();
    const good = await selftestFor(device.path, {}, { hardware: { serialBinding: answering.binding } });
    await machine;
    expect(byName(good.report.checks).serial, JSON.stringify(byName(good.report.checks).serial)).toMatchObject({ status: 'PASS' });
    expect(byName(good.report.checks).serial!.detail).toMatch(/the machine answered the status command \(not vended\)/);

    const silent = createMockSerial('/dev/null');
    const bad = await selftestFor(device.path, {}, { hardware: { serialBinding: silent.binding } });
    expect(failing(bad.report.checks)).toEqual(['serial']);
    expect(byName(bad.report.checks).serial!.detail).toMatch(/no answer to the status command within 300 ms/);
    expect(byName(bad.report.checks).serial!.hint).toMatch(/baudRate.*TX↔RX/);
  });
});
