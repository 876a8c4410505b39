import type { Logger } from '../util/logger.js';
import { errorMessage } from '../util/errors.js';
import { sleep } from '../util/clock.js';
import type { ActuatorSettings } from '../settings/sections/actuator.js';
import type { HardwareBus } from './bus.js';
import type { DigitalOutput } from './gpio/output.js';
import type { Level } from './gpio/onoff.js';
import type { Actuator, ActuatorHealth, VendOutcome, VendRequest } from './types.js';

export interface RelayActuatorDeps {
  logger: Logger;
  bus: HardwareBus;
  /** Opens the pin already driven to `initialLevel` (sysfs/onoff or gpioset). */
  openOutput(initialLevel: Level): Promise<DigitalOutput>;
}

export interface RelayActuatorOptions {
  relay: ActuatorSettings['relay'];
  turnstile: ActuatorSettings['turnstile'];
  mode: 'vending' | 'turnstile';
  /** inputs.passage is configured: a turnstile vend waits for the pass. */
  passageConfigured: boolean;
  vendTimeoutMs: number;
}

type PulsePlan = { count: number } | { error: string };

/** Pulses for one vend: turnstile 1; coin-pulse machines amount / creditPerPulse; else `pulses`. */
export function planPulses(options: RelayActuatorOptions, request: VendRequest): PulsePlan {
  if (options.mode === 'turnstile') return { count: 1 };
  const { creditPerPulse, pulses } = options.relay;
  if (creditPerPulse === undefined) return { count: pulses };
  if (!Number.isInteger(request.amount) || request.amount <= 0) return { error: `amount ${request.amount} cannot be paid out in pulses` };
  if (request.amount % creditPerPulse !== 0) {
    return {
      error: `amount ${request.amount} is not a whole number of pulses at creditPerPulse ${creditPerPulse}: fix the price or actuator.relay.creditPerPulse`,
    };
  }
  return { count: request.amount / creditPerPulse };
}

/**
 * GPIO relay: pulse trains for vending and coin-pulse machines, one opening pulse for a turnstile.
 * The safe state (relay released) is driven at start, at stop and after any error; a turnstile under
 * fire alarm is the exception: its safe state is OPEN, and the relay is held until the alarm clears.
 */
export function createRelayActuator(deps: RelayActuatorDeps, options: RelayActuatorOptions): Actuator {
  const log = deps.logger;
  const { relay, turnstile, mode } = options;
  let output: DigitalOutput | null = null;
  let firing: Promise<VendOutcome> | null = null;
  /** While a pulse train runs, the train owns the pin; an alarm is applied right after it. */
  let pulsing = false;
  let fault: string | null = null;
  let unsubscribe: (() => void) | null = null;
  let stopController = new AbortController();

  /** Electrical level for "relay energized" / "relay released". */
  const levelFor = (energized: boolean): Level => (energized !== relay.activeLow ? 1 : 0);
  const holdOpenForAlarm = () => mode === 'turnstile' && deps.bus.state.fireAlarm;

  async function driveSafe(): Promise<void> {
    if (!output) return;
    try {
      await output.set(levelFor(holdOpenForAlarm()));
    } catch (err) {
      fault = `cannot drive the safe state: ${errorMessage(err)}`;
      log.error({ err, output: output.description }, 'relay safe state failed');
    }
  }

  async function runPulses(out: DigitalOutput, count: number): Promise<{ energized: number; error?: unknown }> {
    let energized = 0;
    const signal = stopController.signal;
    pulsing = true;
    try {
      for (let i = 0; i < count; i++) {
        if (signal.aborted) throw new Error('stopped during the pulse train');
        await out.set(levelFor(true));
        energized++;
        await sleep(relay.pulseMs, signal);
        await out.set(levelFor(false));
        // A pulse cut short by stop() may or may not have registered with the machine.
        if (signal.aborted) throw new Error('stopped during the pulse train');
        if (i < count - 1) await sleep(relay.gapMs, signal);
      }
      await out.verify?.();
      return { energized };
    } catch (error) {
      return { energized, error };
    } finally {
      pulsing = false;
    }
  }

  type PassResult = 'passed' | 'timeout' | 'stopped';
  function waitForPassage(): { promise: Promise<PassResult>; cancel(): void } {
    let done: (result: PassResult) => void = () => {};
    const promise = new Promise<PassResult>((resolve) => {
      done = resolve;
    });
    const timer = setTimeout(() => finish('timeout'), turnstile.passTimeoutMs);
    const off = deps.bus.subscribe((event) => {
      if (event.type === 'passage') finish('passed');
    });
    const signal = stopController.signal;
    const onStop = () => finish('stopped');
    signal.addEventListener('abort', onStop, { once: true });
    function finish(result: PassResult) {
      clearTimeout(timer);
      off();
      signal.removeEventListener('abort', onStop);
      done(result);
    }
    return { promise, cancel: () => finish('stopped') };
  }

  async function fireOnce(out: DigitalOutput, request: VendRequest, count: number): Promise<VendOutcome> {
    // Listen before opening: a quick person can pass while the pulse is still on.
    const confirmPass = mode === 'turnstile' && options.passageConfigured;
    const passage = confirmPass ? waitForPassage() : null;
    const { energized, error } = await runPulses(out, count);
    if (error !== undefined) {
      passage?.cancel();
      await driveSafe();
      log.error({ err: error, orderId: request.orderId, energized, count }, 'relay error during vend');
      if (energized === 0) return { result: 'failed', reason: `relay error before the first pulse: ${errorMessage(error)}` };
      return { result: 'unknown', detail: `vend interrupted after ${energized} of ${count} pulses: ${errorMessage(error)}` };
    }
    // A fire alarm raised mid-pulse must leave the gate open, not released by the pulse's end.
    if (holdOpenForAlarm()) await driveSafe();
    if (!passage) return { result: 'vended', detail: count > 1 ? `${count} pulses` : undefined };
    if (!deps.bus.state.inputsRunning)
      log.error({ orderId: request.orderId }, 'passage sensor configured but the inputs are not running: the pass cannot be confirmed');
    const passed = await passage.promise;
    if (passed === 'passed') return { result: 'vended', detail: 'pass confirmed by the passage sensor' };
    if (passed === 'stopped') return { result: 'unknown', detail: 'stopped while the gate was open: the pass could not be watched' };
    return { result: 'not_passed', detail: `no pass within ${turnstile.passTimeoutMs} ms` };
  }

  return {
    kind: 'relay',
    async start() {
      if (output) return;
      stopController = new AbortController();
      // Open straight into the safe level: most relay boards close on low, and the boot level is not safe.
      output = await deps.openOutput(levelFor(holdOpenForAlarm()));
      fault = null;
      unsubscribe = deps.bus.subscribe((event) => {
        if (event.type !== 'fire_alarm' || mode !== 'turnstile' || pulsing) return;
        log.warn({ active: event.active }, event.active ? 'fire alarm: holding the gate open' : 'fire alarm cleared: gate back to normal');
        void driveSafe();
      });
      log.info({ output: output.description, activeLow: relay.activeLow, mode }, 'relay ready in safe state');
    },
    async fire(request) {
      if (!output) return { result: 'failed', reason: 'relay not started' };
      if (firing) return { result: 'failed', reason: 'another vend is still running on the relay' };
      if (holdOpenForAlarm()) return { result: 'failed', reason: 'fire alarm active: the gate is held open, nothing was sold' };
      const plan = planPulses(options, request);
      if ('error' in plan) return { result: 'failed', reason: plan.error };
      const longest = plan.count * (relay.pulseMs + relay.gapMs) + (mode === 'turnstile' ? turnstile.passTimeoutMs : 0);
      if (longest > options.vendTimeoutMs) {
        return {
          result: 'failed',
          reason: `${plan.count} pulses take ${longest} ms, longer than actuator.vendTimeoutMs ${options.vendTimeoutMs}: nothing was sent`,
        };
      }
      firing = fireOnce(output, request, plan.count);
      try {
        return await firing;
      } finally {
        firing = null;
      }
    },
    health(): ActuatorHealth {
      if (!output) return { ok: false, detail: 'relay not started' };
      if (fault) return { ok: false, detail: fault };
      if (mode === 'turnstile' && options.passageConfigured && !deps.bus.state.inputsRunning) {
        return { ok: false, detail: 'passage sensor configured but the inputs are not running' };
      }
      const alarm = holdOpenForAlarm() ? ', held open by fire alarm' : '';
      return { ok: true, detail: `relay on ${output.description}, activeLow ${relay.activeLow}${alarm}` };
    },
    async stop() {
      if (!output) return;
      stopController.abort();
      unsubscribe?.();
      unsubscribe = null;
      // The aborted train ends at once; let it finish so nothing writes the pin after it is closed.
      await firing?.catch(() => undefined);
      await driveSafe();
      const current = output;
      output = null;
      await current.close().catch((err: unknown) => log.error({ err }, 'relay close failed'));
    },
  };
}
