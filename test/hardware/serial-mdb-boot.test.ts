import { afterEach, describe, expect, it } from 'vitest';
import { createHardware, type Actuator } from '../../src/hardware/index.js';
import { systemClock } from '../../src/util/index.js';
import { captureLogger } from './fakes/capture-logger.js';
import { createMockSerial } from './fakes/mock-serial.js';
import { hardwareSettings } from './fakes/settings.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The board reports the reader coming up after C,1 (the vendor's own example: INACTIVE, DISABLED,
 * ENABLED). That is one boot, not a reset per line; INACTIVE after ENABLED is a real reset.
 */
describe('MDB board boot vs reset', () => {
  let actuator: Actuator | null = null;
  afterEach(async () => {
    await actuator?.stop();
    actuator = null;
  });

  async function board() {
    const mock = createMockSerial();
    const settings = hardwareSettings({
      actuator: {
        kind: 'serial',
        serial: {
          path: mock.path,
          profile: 'mdb',
          timeoutMs: 2_000,
          reconnectMaxMs: 200,
          mdb: { setconf: ['C,SETCONF,mdb-always-idle=1'] },
        },
      },
    });
    const hardware = await createHardware({ clock: systemClock, logger: captureLogger().logger, serialBinding: mock.binding }, settings);
    await hardware.actuator.start();
    actuator = hardware.actuator;
    await waitFor(() => mock.written().endsWith('C,1\n'), { what: 'the first enable' });
    const enables = () =>
      mock
        .written()
        .split('\n')
        .filter((l) => l === 'C,1').length;
    return { mock, actuator: hardware.actuator, enables };
  }

  it('INACTIVE, DISABLED, ENABLED after C,1 bring the reader up with one enable', async () => {
    const b = await board();
    b.mock.emit('c,1\r\nc,STATUS,INACTIVE\r\nc,STATUS,INACTIVE\r\nr,ACK\r\nc,STATUS,DISABLED\r\nr,ACK\r\nc,STATUS,ENABLED\r\n');
    await waitFor(() => b.actuator.health().ok, { what: 'the reader enabled' });
    // A line after the boot makes sure every boot line was read before counting.
    b.mock.emit('c,STATUS,IDLE\r\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(b.enables()).toBe(1);
  });

  it('INACTIVE after the reader was enabled is a reset: the settings and the enable are sent again, once', async () => {
    const b = await board();
    b.mock.emit('c,STATUS,INACTIVE\r\nc,STATUS,DISABLED\r\nc,STATUS,ENABLED\r\n');
    await waitFor(() => b.actuator.health().ok, { what: 'the reader enabled' });
    const mark = b.mock.written().length;
    b.mock.emit('c,STATUS,INACTIVE\r\n');
    await waitFor(() => b.mock.written().slice(mark) === 'C,0\nC,SETCONF,mdb-always-idle=1\nC,1\n', { what: 'the re-enable' });
    b.mock.emit('c,STATUS,INACTIVE\r\nc,STATUS,DISABLED\r\nc,STATUS,ENABLED\r\n');
    await waitFor(() => b.actuator.health().ok, { what: 'enabled again' });
    expect(b.enables()).toBe(2);
  });
});
