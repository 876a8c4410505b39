import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActuator, createHardwareBus, type Actuator } from '../../src/hardware/index.js';
import { silentLogger, systemClock } from '../../src/util/index.js';
import { hardwareSettings } from './fakes/settings.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A stand-in for libgpiod's gpioset: answers --version, logs each invocation with its pid, holds
 * until SIGTERM like `gpioset -m signal` (v1) or v2's default, or fails like a busy line.
 */
function fakeGpioset(dir: string, version: string, options: { failOn?: string } = {}): { command: string; log(): string[] } {
  const logPath = join(dir, 'gpioset.log');
  const command = join(dir, 'gpioset');
  const fail = options.failOn
    ? `case "$*" in *${options.failOn}*) echo "gpioset: error setting the GPIO line values: Device or resource busy" >&2; exit 1;; esac`
    : '';
  writeFileSync(
    command,
    `#!/bin/sh
if [ "$1" = "--version" ]; then echo "gpioset (libgpiod) v${version}"; exit 0; fi
${fail}
child=
trap 'kill $child 2>/dev/null; echo "$$ released" >> "${logPath}"; exit 0' TERM INT
echo "$$ hold $*" >> "${logPath}"
sleep 3600 &
child=$!
wait $child
`,
  );
  chmodSync(command, 0o755);
  return { command, log: () => (existsSync(logPath) ? readFileSync(logPath, 'utf8').trim().split('\n') : []) };
}

/** The log without pids: what was held, in order. */
const actions = (log: string[]) => log.map((line) => line.replace(/^\d+ /, ''));

describe('gpioset relay driver (libgpiod tools, kernels without sysfs GPIO)', () => {
  let dir: string;
  let actuator: Actuator | null = null;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vendgate-gpioset-'));
  });
  afterEach(async () => {
    await actuator?.stop();
    actuator = null;
    rmSync(dir, { recursive: true, force: true });
  });

  async function relay(version: string, relaySettings: Record<string, unknown> = {}, options: { failOn?: string } = {}) {
    const fake = fakeGpioset(dir, version, options);
    const settings = hardwareSettings({
      actuator: { kind: 'relay', relay: { pin: 17, driver: 'gpioset', pulseMs: 100, ...relaySettings } },
    });
    actuator = await createActuator(
      { clock: systemClock, logger: silentLogger(), gpiosetCommand: fake.command, bus: createHardwareBus() },
      settings,
    );
    return { fake, actuator };
  }

  it('v2 syntax: holds the safe level from start (-c chip offset=value), pulses by replacing the holder', async () => {
    const { fake, actuator: relayActuator } = await relay('2.1.3');
    await relayActuator.start();
    expect(actions(fake.log())).toEqual(['hold -c gpiochip0 17=1']);
    await expect(
      relayActuator.fire({ orderId: 1, reference: 'r', slot: 'A1', amount: 150, currency: 'MNT', mode: 'vending' }),
    ).resolves.toEqual({ result: 'vended' });
    await waitFor(() => actions(fake.log()).length === 5, { what: 'holders to be replaced' });
    expect(actions(fake.log())).toEqual([
      'hold -c gpiochip0 17=1',
      'released',
      'hold -c gpiochip0 17=0',
      'released',
      'hold -c gpiochip0 17=1',
    ]);
  });

  it('v1 syntax: -m signal chip offset=value, and the configured chip is used', async () => {
    const { fake, actuator: relayActuator } = await relay('1.6.3', { chip: 'gpiochip4', activeLow: false });
    await relayActuator.start();
    expect(actions(fake.log())).toEqual(['hold -m signal gpiochip4 17=0']);
  });

  it('stop releases the line: no gpioset is left running', async () => {
    const { fake, actuator: relayActuator } = await relay('2.1.3');
    await relayActuator.start();
    await relayActuator.stop();
    await relayActuator.stop();
    await waitFor(() => fake.log().at(-1)?.endsWith('released'), { what: 'holder released' });
    const pid = Number(fake.log()[0]!.split(' ')[0]);
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('a gpioset that cannot take the line fails start with its message and what to check', async () => {
    const { actuator: relayActuator } = await relay('2.1.3', {}, { failOn: '17=1' });
    await expect(relayActuator.start()).rejects.toThrow(
      /exited with 1: gpioset: error setting the GPIO line values: Device or resource busy — check actuator.relay.chip \(gpiodetect\)/,
    );
  });

  it('a holder that dies during the pulse makes the vend unknown, and the relay is held at rest again', async () => {
    const { fake, actuator: relayActuator } = await relay('2.1.3', {}, { failOn: '17=0' });
    await relayActuator.start();
    const outcome = await relayActuator.fire({ orderId: 1, reference: 'r', slot: 'A1', amount: 150, currency: 'MNT', mode: 'vending' });
    expect(outcome).toMatchObject({
      result: 'unknown',
      detail: expect.stringMatching(/after 1 of 1 pulses: .*17=0 exited with 1: .*Device or resource busy/),
    });
    expect(actions(fake.log())).toEqual(['hold -c gpiochip0 17=1', 'released', 'hold -c gpiochip0 17=1']);
  });

  it('without gpioset installed the error says to install gpiod', async () => {
    const settings = hardwareSettings({ actuator: { kind: 'relay', relay: { pin: 17, driver: 'gpioset' } } });
    actuator = await createActuator(
      { clock: systemClock, logger: silentLogger(), gpiosetCommand: join(dir, 'missing-gpioset'), bus: createHardwareBus() },
      settings,
    );
    await expect(actuator.start()).rejects.toThrow(/cannot run .*missing-gpioset \(ENOENT\): install libgpiod tools \(apt install gpiod\)/);
  });
});
