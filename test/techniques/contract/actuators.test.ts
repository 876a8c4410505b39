/**
 * Every actuator against the one actuator contract (./actuator-contract.ts): the simulated machine,
 * the GPIO relay on a fake GPIO (a Pi 4's sysfs fixture), the serial line profile and the MDB board
 * profile on serialport's mock binding. Each target plays its machine's side of one vend.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import {
  createActuator,
  createHardware,
  createHardwareBus,
  type HardwareEvent,
  type VendOutcome,
  type VendRequest,
} from '../../../src/hardware/index.js';
import { createSimActuator } from '../../../src/hardware/sim.js';
import { createManualClock } from '../../../src/util/clock.js';
import { silentLogger, systemClock } from '../../../src/util/index.js';
import { createFakeGpio } from '../../hardware/fakes/fake-gpio.js';
import { createMockSerial } from '../../hardware/fakes/mock-serial.js';
import { hardwareSettings } from '../../hardware/fakes/settings.js';

import { tempDir } from '../../helpers/temp.js';
import { actuatorContract } from './actuator-contract.js';
import { waitFor } from '../../helpers/wait.js';

// Generous: the machine may be busy with another suite; every wait is on a condition.
const WAIT = { timeoutMs: 20_000 };
const PI4_SYSFS = fileURLToPath(new URL('../../fixtures/sysfs/pi4', import.meta.url));
const SYSFS_BCM_17 = 529; // BCM 17 on a Pi 4 with kernel ≥ 6.6

let orderId = 0;
const request = (slot: string, amount: number): VendRequest => {
  orderId += 1;
  return { orderId, reference: `test-1-1-${orderId}`, slot, amount, currency: 'MNT', mode: 'vending' };
};

const dir = tempDir('vendgate-actuators-');
afterAll(() => dir.cleanup());

actuatorContract({
  kind: 'sim',
  name: 'simulated machine',
  canBeUnanswered: true,
  async start() {
    const actuator = createSimActuator(
      { clock: createManualClock() },
      { logPath: join(dir.path, `sim-${orderId}.jsonl`), durationMs: 0, failMode: 'none' },
    );
    await actuator.start();
    const fireAs = (mode: 'none' | 'fail' | 'timeout') => {
      actuator.setFailMode(mode);
      return actuator.fire(request('A1', 150));
    };
    return { actuator, delivered: () => fireAs('none'), refused: () => fireAs('fail'), unanswered: () => fireAs('timeout') };
  },
});

actuatorContract({
  kind: 'relay',
  name: 'GPIO relay on a fake GPIO',
  canBeUnanswered: false,
  async start() {
    const gpio = createFakeGpio();
    const settings = hardwareSettings({ actuator: { kind: 'relay', relay: { pin: 17, pulseMs: 20 } } });
    const actuator = await createActuator(
      { clock: systemClock, logger: silentLogger(), Gpio: gpio.Gpio, sysfsRoot: PI4_SYSFS, bus: createHardwareBus() },
      settings,
    );
    await actuator.start();
    return {
      actuator,
      delivered: () => actuator.fire(request('A1', 150)),
      // The relay board is gone: the first write of the pulse fails, nothing was energised.
      refused: () => {
        gpio.pin(SYSFS_BCM_17).failNextWrite = Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
        return actuator.fire(request('A1', 150));
      },
    };
  },
});

actuatorContract({
  kind: 'serial',
  name: 'serial line profile on the mock binding',
  canBeUnanswered: true,
  async start() {
    const mock = createMockSerial();
    const settings = hardwareSettings({ actuator: { kind: 'serial', serial: { path: mock.path, reconnectMaxMs: 200, timeoutMs: 300 } } });
    const { actuator } = await createHardware({ clock: systemClock, logger: silentLogger(), serialBinding: mock.binding }, settings);
    await actuator.start();
    await waitFor(() => actuator.health().ok, { ...WAIT, what: 'line up' });
    const vend = async (reply: string | null): Promise<VendOutcome> => {
      const mark = mock.written().length;
      const outcome = actuator.fire(request('A1', 150));
      await waitFor(() => mock.written().slice(mark).includes('VEND A1\r\n'), { ...WAIT, what: 'the vend command' });
      if (reply !== null) mock.emit(reply);
      return outcome;
    };
    return { actuator, delivered: () => vend('OK A1\r\n'), refused: () => vend('ERR A1 JAM\r\n'), unanswered: () => vend(null) };
  },
});

actuatorContract({
  kind: 'serial',
  name: 'MDB board profile on the mock binding',
  canBeUnanswered: true,
  async start() {
    const mock = createMockSerial();
    const settings = hardwareSettings({
      actuator: { kind: 'serial', serial: { path: mock.path, profile: 'mdb', timeoutMs: 300, reconnectMaxMs: 200, mdb: { setconf: [] } } },
    });
    const { actuator, inputs } = await createHardware(
      { clock: systemClock, logger: silentLogger(), serialBinding: mock.binding },
      settings,
    );
    const events: HardwareEvent[] = [];
    inputs.on((event) => events.push(event));
    await inputs.start();
    await actuator.start();
    await waitFor(() => mock.written().endsWith('C,1\n'), { ...WAIT, what: 'enable sequence' });
    mock.emit('c,STATUS,ENABLED\r\n');
    await waitFor(() => actuator.health().ok, { ...WAIT, what: 'reader enabled' });
    // The customer picks item 12 at 1.50 on the machine; once paid, the gateway approves it.
    const vend = async (reply: string | null): Promise<VendOutcome> => {
      const requests = events.filter((e) => e.type === 'vend_request').length;
      mock.emit('c,STATUS,VEND,1.50,12\r\n');
      await waitFor(() => events.filter((e) => e.type === 'vend_request').length > requests, { ...WAIT, what: 'the vend request' });
      const mark = mock.written().length;
      const outcome = actuator.fire(request('12', 150));
      await waitFor(() => mock.written().slice(mark).includes('C,VEND,1.50\n'), { ...WAIT, what: 'the approval' });
      if (reply !== null) mock.emit(reply);
      return outcome;
    };
    return {
      actuator: {
        ...actuator,
        kind: actuator.kind,
        stop: async () => {
          await actuator.stop();
          await inputs.stop();
        },
      },
      delivered: () => vend('c,VEND,SUCCESS\r\nc,STATUS,IDLE\r\nc,STATUS,ENABLED\r\n'),
      refused: () => vend('c,ERR,VEND 3\r\nc,STATUS,ENABLED\r\n'),
      unanswered: () => vend(null),
    };
  },
});
