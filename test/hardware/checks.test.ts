import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { checkHardware } from '../../src/hardware/index.js';
import { hardwareSettings } from './fakes/settings.js';

const pi4 = fileURLToPath(new URL('../fixtures/sysfs/pi4', import.meta.url));

describe('hardware checks for the selftest', () => {
  it('maps the relay and every input pin, without touching them', async () => {
    const settings = hardwareSettings({ actuator: { kind: 'relay', relay: { pin: 17 } }, inputs: { button: { pin: 5 } } });
    await expect(checkHardware({ sysfsRoot: pi4, skipOnoff: true }, settings)).resolves.toEqual([
      { name: 'actuator.relay.pin', ok: true, detail: 'BCM 17 → sysfs gpio529 on pinctrl-bcm2711 (base 512)' },
      { name: 'inputs.button.pin', ok: true, detail: 'BCM 5 → sysfs gpio517 on pinctrl-bcm2711 (base 512)' },
    ]);
  });

  it('a missing serial device fails with where to look', async () => {
    const settings = hardwareSettings({ actuator: { kind: 'serial', serial: { path: '/dev/serial/by-id/usb-not-plugged-in' } } });
    const [result] = await checkHardware({}, settings);
    expect(result).toMatchObject({
      name: 'actuator.serial.path',
      ok: false,
      detail: expect.stringMatching(/does not exist \(ENOENT\): check the USB cable .*ls \/dev\/serial\/by-id/),
    });
  });

  it('a serial path that is not a device is refused', async () => {
    const settings = hardwareSettings({ actuator: { kind: 'serial', serial: { path: fileURLToPath(import.meta.url) } } });
    const [result] = await checkHardware({}, settings);
    expect(result).toMatchObject({ ok: false, detail: expect.stringMatching(/is not a serial device/) });
  });

  it('a character device is accepted', async () => {
    const settings = hardwareSettings({ actuator: { kind: 'serial', serial: { path: '/dev/null' } } });
    await expect(checkHardware({}, settings)).resolves.toEqual([
      { name: 'actuator.serial.path', ok: true, detail: '/dev/null present (line profile, 9600 baud)' },
    ]);
  });

  it('on a machine without Pi GPIO the pin check fails with the chips it found', async () => {
    const settings = hardwareSettings({ actuator: { kind: 'relay', relay: { pin: 17 } } });
    const noPi = fileURLToPath(new URL('../fixtures/sysfs/no-pi', import.meta.url));
    const [result] = await checkHardware({ sysfsRoot: noPi, skipOnoff: true }, settings);
    expect(result).toMatchObject({ ok: false, detail: expect.stringMatching(/no Raspberry Pi GPIO chip/) });
  });
});
