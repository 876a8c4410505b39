import { describe, expect, it } from 'vitest';
import { SettingsError } from '../../src/settings/index.js';
import { hardwareSettings } from './fakes/settings.js';

function problems(run: () => unknown): string[] {
  try {
    run();
  } catch (err) {
    if (err instanceof SettingsError) return err.problems;
    throw err;
  }
  throw new Error('expected the settings to be rejected');
}

describe('hardware settings', () => {
  it('defaults: sim actuator, relay pulse 300 ms active-low, line profile VEND {slot}, vend timeout 30 s', () => {
    const { actuator, inputs } = hardwareSettings();
    expect(actuator.kind).toBe('sim');
    expect(actuator.relay).toMatchObject({ driver: 'sysfs', activeLow: true, pulseMs: 300, pulses: 1 });
    expect(actuator.serial).toMatchObject({ profile: 'line', vendCommand: 'VEND {slot}\r\n', timeoutMs: 5_000 });
    expect(actuator.serial.mdb).toMatchObject({ prices: 'catalog', setconf: [] });
    expect(actuator.serial.mdb.scale).toBeUndefined();
    expect(actuator.vendTimeoutMs).toBe(30_000);
    expect(inputs).toEqual({});
  });

  it('a physical header position or a sysfs number as a pin is rejected with what to use instead', () => {
    const found = problems(() => hardwareSettings({ actuator: { kind: 'relay', relay: { pin: 529 } }, inputs: { button: { pin: 40 } } }));
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^actuator\.relay\.pin: .*BCM GPIO 0–27.*not the physical pin position.*sysfs number/),
        expect.stringMatching(/^inputs\.button\.pin: .*BCM GPIO 0–27/),
      ]),
    );
  });

  it('relay kind without a pin and serial kind without a path say what to set', () => {
    expect(problems(() => hardwareSettings({ actuator: { kind: 'relay' } }))).toEqual([
      expect.stringMatching(/^actuator\.relay\.pin: .*needs relay\.pin/),
    ]);
    expect(problems(() => hardwareSettings({ actuator: { kind: 'serial' } }))).toEqual([
      expect.stringMatching(/^actuator\.serial\.path: .*by-id/),
    ]);
  });

  it('two inputs on one pin are rejected', () => {
    expect(problems(() => hardwareSettings({ inputs: { button: { pin: 5 }, inhibit: { pin: 5 } } }))).toEqual([
      expect.stringMatching(/^inputs\.inhibit\.pin: BCM 5 is already inputs\.button\.pin/),
    ]);
  });

  it('a misspelt key is an error, not silently ignored', () => {
    expect(problems(() => hardwareSettings({ actuator: { relay: { pulsems: 200 } } }))).toEqual([
      expect.stringMatching(/^actuator\.relay\.pulsems: unknown key; did you mean "pulseMs"\?/),
    ]);
  });

  it('an invalid answer pattern is rejected', () => {
    expect(problems(() => hardwareSettings({ actuator: { kind: 'serial', serial: { path: '/dev/x', okPattern: '^OK(' } } }))).toEqual([
      expect.stringMatching(/^actuator\.serial\.okPattern: not a valid regular expression/),
    ]);
  });

  it('the MDB profile waits 60 s for the machine and the vend timeout grows with it', () => {
    const { actuator } = hardwareSettings({ actuator: { kind: 'serial', serial: { path: '/dev/x', profile: 'mdb' } } });
    expect(actuator.serial.timeoutMs).toBe(60_000);
    expect(actuator.vendTimeoutMs).toBe(125_000);
  });

  it('a vend timeout shorter than the actuator can take is rejected', () => {
    expect(
      problems(() =>
        hardwareSettings({ actuator: { kind: 'serial', vendTimeoutMs: 10_000, serial: { path: '/dev/x', statusCommand: 'STATUS\r\n' } } }),
      ),
    ).toEqual([expect.stringMatching(/^actuator\.vendTimeoutMs: shorter than the serial actuator's own worst case \(15000 ms\)/)]);
  });

  it('an MDB settings line must be a full board command', () => {
    expect(problems(() => hardwareSettings({ actuator: { serial: { mdb: { setconf: ['mdb-always-idle=1'] } } } }))).toEqual([
      expect.stringMatching(/^actuator\.serial\.mdb\.setconf\.0: a full board command line/),
    ]);
  });
});
