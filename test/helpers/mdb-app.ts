import { afterEach } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { createHardware } from '../../src/hardware/index.js';
import { silentLogger, systemClock } from '../../src/util/index.js';
import { createMockSerial } from '../hardware/fakes/mock-serial.js';
import { testSettings } from './core.js';
import { tempDir } from './temp.js';
import { waitFor } from './wait.js';

/**
 * The whole app in process with the real MDB profile on serialport's mock line, started and the reader
 * enabled by the machine (`C,1` written, `STATUS,ENABLED` answered); `mdb` is actuator.serial.mdb.
 * Registers its own afterEach (call it inside describe()): the app is stopped and its dir removed
 * after the test that made it.
 */
export function mdbAppPerTest() {
  let app: App | null = null;
  let dir: ReturnType<typeof tempDir> | null = null;
  afterEach(async () => {
    await app?.stop();
    app = null;
    dir?.cleanup();
    dir = null;
  });
  return async (mdb: Record<string, unknown> = {}) => {
    dir = tempDir();
    const mock = createMockSerial();
    const settings = testSettings(dir.path, {
      actuator: { kind: 'serial', serial: { path: mock.path, profile: 'mdb', timeoutMs: 2_000, reconnectMaxMs: 200, mdb } },
    });
    const hardware = await createHardware({ clock: systemClock, logger: silentLogger(), serialBinding: mock.binding }, settings);
    const started = (app = createApp(settings, { logger: silentLogger(), actuator: hardware.actuator, inputs: hardware.inputs }));
    const { localUrl } = await started.start();
    await waitFor(() => mock.written().endsWith('C,1\n'), { what: 'the reader enabled' });
    mock.emit('c,STATUS,ENABLED\r\n');
    await waitFor(() => hardware.actuator.health().ok, { what: 'reader enabled by the machine' });
    return { app: started, mock, hardware, localUrl, ctx: started.context() };
  };
}
