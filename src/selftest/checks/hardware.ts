import type { Settings } from '../../settings/index.js';
import {
  checkHardware,
  createHardware,
  createHardwareBus,
  type Actuator,
  type HardwareCheck,
  type HardwareInputs,
  type VendRequest,
} from '../../hardware/index.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import type { CheckResult, LiveComponents, SelftestDeps } from '../types.js';
import { describeError, fail, pass, warn } from '../helpers.js';
import type { ServiceState } from './listeners.js';

export interface HardwareCheckDeps {
  clock: Clock;
  logger: Logger;
  hardware: SelftestDeps['hardware'];
  live: LiveComponents | undefined;
}

const SERIAL_HINT =
  'check the USB cable and actuator.serial.path (ls -l /dev/serial/by-id/); the vendgate user must be in the dialout group';
const GPIO_HINT =
  'check actuator.relay.pin (a BCM number), that the vendgate user is in the gpio group, and the kernel GPIO driver (cat /sys/kernel/debug/gpio, gpiodetect)';
const INPUT_HINT = 'check inputs.<name>.pin (a BCM number) and the gpio group; cat /sys/kernel/debug/gpio shows who holds the pin';
/** How long a freshly opened serial port gets to come up. */
const SERIAL_UP_MS = 2_000;

/** The line the actuator gets in the table: what is wired, by kind. */
export function actuatorCheckName(settings: Readonly<Settings>): string {
  return settings.actuator.kind === 'relay' ? 'gpio' : settings.actuator.kind === 'serial' ? 'serial' : 'actuator';
}

/** Said before asking "go ahead?", so the person knows what will move. */
export function describeActuation(settings: Readonly<Settings>): string {
  const a = settings.actuator;
  const request = testVendRequest(settings);
  switch (a.kind) {
    case 'sim':
      return `one simulated vend (a line in ${a.sim.logPath})`;
    case 'relay': {
      const pulses = a.relay.creditPerPulse ? Math.floor(request.amount / a.relay.creditPerPulse) : a.relay.pulses;
      const what = settings.device.mode === 'turnstile' ? 'the gate opens for one person' : 'the machine gets the credit of one test vend';
      return `${pulses} relay pulse(s) of ${a.relay.pulseMs} ms on BCM ${a.relay.pin}: ${what}`;
    }
    case 'serial':
      return a.serial.profile === 'mdb'
        ? 'nothing: MDB machines start vends themselves (select a product on the machine to test)'
        : `the vend command for slot ${request.slot ?? '-'} on ${a.serial.path}: the machine dispenses one item`;
  }
}

function testVendRequest(settings: Readonly<Settings>): VendRequest {
  const first = settings.device.catalog[0];
  const turnstile = settings.device.mode === 'turnstile';
  const amount = settings.actuator.relay.creditPerPulse ?? (turnstile ? settings.device.fare : first?.price) ?? 1;
  return {
    orderId: 0,
    reference: 'selftest',
    slot: turnstile ? null : (first?.slot ?? null),
    amount,
    currency: settings.device.currency,
    mode: settings.device.mode,
  };
}

function levels(inputs: HardwareInputs, settings: Readonly<Settings>): string {
  const read = inputs.read();
  return Object.keys(settings.inputs)
    .filter((name) => settings.inputs[name as keyof typeof settings.inputs])
    .map((name) => `${name} ${read[name] === null || read[name] === undefined ? 'unknown' : read[name] ? 'ACTIVE' : 'inactive'}`)
    .join(', ');
}

function anyInputs(settings: Readonly<Settings>): boolean {
  return Object.values(settings.inputs).some((input) => input !== undefined);
}

/** checkHardware's findings: no pin exported, no port opened — safe while the service runs. */
function staticFindings(found: HardwareCheck[], mine: (name: string) => boolean): { failed: HardwareCheck | undefined; detail: string } {
  const selected = found.filter((c) => mine(c.name));
  return { failed: selected.find((c) => !c.ok), detail: selected.map((c) => c.detail).join('; ') };
}

async function waitUp(actuator: Actuator, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!actuator.health().ok && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
}

/**
 * GPIO, serial and inputs. Inside the service: its own components' health. Beside a running
 * service: only what can be looked at without taking the port or the pins from it. Service stopped:
 * the real actuator and inputs are built with the service's factories, started, read and stopped.
 */
export async function checkHardwareLines(
  settings: Readonly<Settings>,
  deps: HardwareCheckDeps,
  service: ServiceState,
  actuate: boolean,
): Promise<CheckResult[]> {
  const name = actuatorCheckName(settings);
  const kind = settings.actuator.kind;
  const hint = kind === 'serial' ? SERIAL_HINT : GPIO_HINT;
  const found = await checkHardware(
    { sysfsRoot: deps.hardware?.sysfsRoot, skipOnoff: deps.hardware?.Gpio !== undefined, gpiosetCommand: deps.hardware?.gpiosetCommand },
    settings,
  );
  // onoff is loaded for the relay and for inputs alike: its failure belongs to whichever uses it first.
  const actuatorStatic = staticFindings(
    found,
    (n) => n.startsWith(`actuator.${kind}`) || (kind === 'relay' && (n === 'onoff' || n === 'relay gpioset')),
  );
  const inputsStatic = staticFindings(found, (n) => n.startsWith('inputs.') || (kind !== 'relay' && n === 'onoff'));
  const results: CheckResult[] = [];

  if (deps.live) {
    const health = deps.live.actuator.health();
    results.push(health.ok ? pass(name, health.detail) : fail(name, health.detail, hint));
    if (anyInputs(settings))
      results.push(
        inputsStatic.failed ? fail('inputs', inputsStatic.failed.detail, INPUT_HINT) : pass('inputs', levels(deps.live.inputs, settings)),
      );
    return results;
  }

  if (actuatorStatic.failed) results.push(fail(name, actuatorStatic.failed.detail, hint));
  if (inputsStatic.failed) results.push(fail('inputs', inputsStatic.failed.detail, INPUT_HINT));
  const exclusive = kind !== 'sim';
  if (service.running && exclusive) {
    // The service holds the port (serialport locks it) and the exported pins: look, do not touch.
    if (!actuatorStatic.failed) results.push(pass(name, `${actuatorStatic.detail}; in use by the running service`));
    if (anyInputs(settings) && !inputsStatic.failed)
      results.push(pass('inputs', `${inputsStatic.detail}; levels are read by the running service (MQTT cmd/selftest shows them)`));
    if (actuate)
      results.push(
        fail(
          'actuate',
          'not done: the running service holds the hardware',
          'stop it for the test (sudo systemctl stop vendgate), run vendgate selftest --actuate, start it again; or use MQTT cmd/test_vend',
        ),
      );
    return results;
  }
  if (actuatorStatic.failed || inputsStatic.failed) {
    if (actuate) results.push(fail('actuate', 'not done: the hardware check failed', 'fix the lines above first'));
    if (!actuatorStatic.failed) results.push(pass(name, actuatorStatic.detail || 'configured'));
    return results;
  }

  const built = await createHardware(
    { clock: deps.clock, logger: deps.logger, ...deps.hardware, bus: createHardwareBus(deps.logger) },
    settings,
  );
  try {
    if (anyInputs(settings)) {
      try {
        await built.inputs.start();
        results.push(pass('inputs', levels(built.inputs, settings)));
      } catch (err) {
        results.push(fail('inputs', describeError(err), INPUT_HINT));
      }
    }
    try {
      await built.actuator.start();
    } catch (err) {
      results.unshift(fail(name, describeError(err), hint));
      if (actuate) results.push(fail('actuate', 'not done: the actuator did not start', 'fix the line above first'));
      return results;
    }
    if (kind === 'serial') await waitUp(built.actuator, SERIAL_UP_MS);
    results.unshift(await actuatorLine(settings, built.actuator, name, hint, actuatorStatic.detail));
    if (actuate) results.push(await testVend(settings, built.actuator, results[0]!.status !== 'FAIL'));
    return results;
  } finally {
    await built.actuator.stop().catch(() => {});
    await built.inputs.stop().catch(() => {});
  }
}

async function actuatorLine(
  settings: Readonly<Settings>,
  actuator: Actuator,
  name: string,
  hint: string,
  staticDetail: string,
): Promise<CheckResult> {
  const health = actuator.health();
  if (!health.ok) return fail(name, health.detail, hint);
  const serial = settings.actuator.serial;
  if (settings.actuator.kind === 'serial' && serial.profile === 'line' && serial.statusCommand && actuator.queryOutcome) {
    const answer = await actuator.queryOutcome(testVendRequest(settings));
    if (answer === 'unknown') {
      return fail(
        name,
        `${health.detail}, but no answer to the status command within ${serial.timeoutMs} ms`,
        'check actuator.serial.baudRate, the wiring (TX↔RX crossed, common ground), that the machine is on, and statusVendedPattern/statusNotVendedPattern',
      );
    }
    return pass(name, `${health.detail}; the machine answered the status command (${answer.replace('_', ' ')})`);
  }
  if (settings.actuator.kind === 'relay') return pass(name, `${staticDetail}; exported and driven to the safe level (${health.detail})`);
  return pass(name, health.detail);
}

async function testVend(settings: Readonly<Settings>, actuator: Actuator, healthy: boolean): Promise<CheckResult> {
  const name = 'actuate';
  if (!healthy) return fail(name, 'not done: the actuator is not healthy', 'fix the line above first');
  if (settings.actuator.kind === 'serial' && settings.actuator.serial.profile === 'mdb') {
    return warn(
      name,
      'not done: an MDB machine starts each vend itself',
      'select a product on the machine and pay for it to test the whole path',
    );
  }
  const request = testVendRequest(settings);
  const started = Date.now();
  const outcome = await actuator.fire(request);
  const ms = Date.now() - started;
  switch (outcome.result) {
    case 'vended':
      return pass(name, `test vend delivered in ${ms} ms${outcome.detail ? ` (${outcome.detail})` : ''}`);
    case 'not_passed':
      return pass(name, `gate opened; nobody passed within ${settings.actuator.turnstile.passTimeoutMs} ms (expected in a test)`);
    case 'failed':
      return fail(name, `test vend failed: ${outcome.reason}`, 'check the machine (jam, door open, service mode) and the wiring');
    case 'unknown':
      return fail(
        name,
        `test vend outcome unknown: ${outcome.detail}`,
        'look at the machine: did it dispense? then check the answer patterns in actuator.serial',
      );
  }
}
