import * as z from 'zod';
import type { CommandResults } from '../../command-results.js';
import { requestId, type CommandContext, type Handlers } from '../family.js';

/** `cmd/ping`, `cmd/out_of_service`, `cmd/selftest`: the device itself, no money. */
export const deviceSchemas = {
  ping: z.object({ requestId }).strict(),
  out_of_service: z.object({ requestId, on: z.boolean(), reason: z.string().min(1).max(200).optional() }).strict(),
  selftest: z.object({ requestId }).strict(),
} as const;

/**
 * A selftest finished this recently answers a new request (unsigned, so anyone's) with its report:
 * the checks call the provider and write the stored result, which a flood must not multiply.
 */
export const SELFTEST_REUSE_MS = 10_000;

type SelftestAnswer = CommandResults['selftest'];

export function deviceHandlers(ctx: CommandContext): Handlers<typeof deviceSchemas> {
  const { control, clock } = ctx;
  /** One selftest at a time: requests meanwhile (and just after) share its answer. */
  let selftest: { promise: Promise<SelftestAnswer>; finishedAt: number | null } | null = null;

  function selftestOnce(): Promise<SelftestAnswer> {
    if (selftest && (selftest.finishedAt === null || clock.now() - selftest.finishedAt < SELFTEST_REUSE_MS))
      return selftest.promise.then((outcome) => ({ ...outcome, shared: true }));
    const current: { promise: Promise<SelftestAnswer>; finishedAt: number | null } = {
      promise: Promise.resolve({ ok: false, report: null }),
      finishedAt: null,
    };
    current.promise = (async () => {
      try {
        const outcome = await control.runSelftest();
        ctx.onSelftest?.(outcome.report);
        return outcome;
      } finally {
        current.finishedAt = clock.now();
      }
    })();
    selftest = current;
    return current.promise;
  }

  return {
    ping: () => ({ pong: true, at: new Date(clock.now()).toISOString() }),
    out_of_service: ({ on, reason }, by) => {
      control.setOutOfService(on, reason ?? 'set over MQTT', by);
      return control.state();
    },
    selftest: () => selftestOnce(),
  };
}
