/**
 * The actuator contract (src/hardware/types.ts): the same cases, run against every actuator — the
 * simulated machine, the GPIO relay on a fake GPIO, the serial line and the MDB board on
 * serialport's mock binding. A case here states what the vend runner may rely on whichever
 * actuator is configured: the outcome vocabulary, never a throw, `unknown` (never `failed`) for a
 * machine that got the command and said nothing, a stop that is safe twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Actuator, VendOutcome } from '../../../src/hardware/index.js';

export interface ActuatorUnderTest {
  actuator: Actuator;
  /** One vend that the machine side delivers (the test plays the machine). */
  delivered(): Promise<VendOutcome>;
  /** One vend that the machine side refuses for sure (nothing came out). */
  refused(): Promise<VendOutcome>;
  /** One vend whose command reached a machine that never answers; absent where nothing can be unanswered (a relay). */
  unanswered?(): Promise<VendOutcome>;
}

export interface ActuatorTarget {
  kind: Actuator['kind'];
  name: string;
  /** A started actuator, ready to fire. */
  start(): Promise<ActuatorUnderTest>;
  /** Whether a command can go out unanswered (false for a relay: it drives a pin and is done). */
  canBeUnanswered: boolean;
}

export function actuatorContract(target: ActuatorTarget): void {
  describe(`actuator contract: ${target.name}`, () => {
    let running: ActuatorUnderTest | undefined;
    afterEach(async () => {
      await running?.actuator.stop();
      running = undefined;
    });

    it(`is the ${target.kind} kind and reports healthy once started`, async () => {
      running = await target.start();
      expect(running.actuator.kind).toBe(target.kind);
      expect(running.actuator.health()).toMatchObject({ ok: true, detail: expect.any(String) });
    });

    it('a vend the machine delivers resolves `vended`', async () => {
      running = await target.start();
      await expect(running.delivered()).resolves.toMatchObject({ result: 'vended' });
    });

    it('a vend the machine refuses resolves `failed` with a reason, and does not throw', async () => {
      running = await target.start();
      const outcome = await running.refused();
      expect(outcome.result).toBe('failed');
      expect(outcome).toMatchObject({ reason: expect.stringMatching(/\S/) });
    });

    it('after a refused vend the next delivered one is `vended`: one failure leaves the actuator usable', async () => {
      running = await target.start();
      await running.refused();
      await expect(running.delivered()).resolves.toMatchObject({ result: 'vended' });
    });

    if (target.canBeUnanswered) {
      it('a command that went out and got no answer is `unknown` with a detail, never `failed` (no blind refund)', async () => {
        running = await target.start();
        expect(running.unanswered, 'canBeUnanswered targets provide unanswered()').toBeTypeOf('function');
        const outcome = await running.unanswered!();
        expect(outcome).toMatchObject({ result: 'unknown', detail: expect.stringMatching(/\S/) });
      });
    }

    it('stop() is safe to call twice', async () => {
      const started = await target.start();
      await started.actuator.stop();
      await expect(started.actuator.stop()).resolves.toBeUndefined();
    });
  });
}
