import * as z from 'zod';
import { ErrorCodes, VendgateError } from '../../../util/errors.js';
import type { Clock } from '../../../util/clock.js';
import type { CommandResults } from '../../command-results.js';
import type { DexControl } from '../../types.js';
import { CommandError, CommandErrorCodes } from '../answers.js';
import { requestId, type CommandContext, type Handlers } from '../family.js';

/**
 * `cmd/dex` and `cmd/visit`: the audit (DEX) and the service visit over MQTT, through the same code
 * as `vendgate dex` and `vendgate visit` (src/dex/). Their bodies:
 *
 * - `cmd/dex {requestId}`: a plain read now, never a reset; `{requestId, read: N}`: read N again as
 *   it was sent (one of the last `dex.keepReads`). Either way the file goes out on `<prefix>/<device>/dex`
 *   and the result carries its header. Read-only, so unsigned is accepted (a VMS collector need not
 *   hold an operator key); a flood is bounded below, since every read is a row on the card.
 * - `cmd/visit {requestId, by, fills}` (signed): who came, what each filled slot now holds (which
 *   sets its counted stock), and the reset read that starts the next interval, in one commit.
 */

const slot = z.string().min(1).max(16);

export const dexSchemas = {
  dex: z.object({ requestId, read: z.number().int().positive().optional() }).strict(),
  visit: z
    .object({
      requestId,
      by: z.string().trim().min(1).max(100),
      fills: z
        .record(slot, z.number().int().min(0).max(10_000))
        .refine((fills) => Object.keys(fills).length <= 200, 'at most 200 slots in one visit')
        .default({}),
    })
    .strict(),
} as const;

/** A fresh read asked for this soon after the last one answers with that one: the figures are the same. */
export const DEX_REUSE_MS = 10_000;
/** At most this many reads and re-sent reads a minute on demand; more are refused (VG_ERR_RATE_LIMITED). */
export const DEX_PER_MINUTE = 30;

type Header = CommandResults['dex'];

export function createDexCommands(deps: { clock: Clock }) {
  const { clock } = deps;
  let lastRead: { at: number; header: Header } | null = null;
  const resent = new Map<number, { at: number; header: Header }>();
  const published: number[] = [];

  /** One more publication on demand, or the refusal that says when to ask again. */
  function allow(): void {
    const now = clock.now();
    while (published.length > 0 && (published[0] ?? now) <= now - 60_000) published.shift();
    if (published.length >= DEX_PER_MINUTE) {
      const wait = Math.ceil(((published[0] ?? now) + 60_000 - now) / 1_000);
      throw new VendgateError(
        ErrorCodes.RATE_LIMITED,
        `at most ${DEX_PER_MINUTE} audit reads a minute on demand; nothing was read: ask again in ${wait} s`,
      );
    }
    published.push(now);
  }

  function run(name: 'dex', body: Record<string, unknown>, control: DexControl, by: string): CommandResults['dex'];
  function run(name: 'visit', body: Record<string, unknown>, control: DexControl, by: string): CommandResults['visit'];
  function run(
    name: keyof typeof dexSchemas,
    body: Record<string, unknown>,
    control: DexControl,
    by: string,
  ): CommandResults['dex'] | CommandResults['visit'] {
    const now = clock.now();
    if (name === 'visit') {
      const { by: who, fills } = dexSchemas.visit.parse(body);
      // The interval starts again: a read asked for after this is a new one.
      lastRead = null;
      return control.visit(who, fills, by);
    }
    const { read } = dexSchemas.dex.parse(body);
    if (read === undefined) {
      if (lastRead && now - lastRead.at < DEX_REUSE_MS) return { ...lastRead.header, shared: true };
      allow();
      const header = control.read(by);
      lastRead = { at: now, header };
      return header;
    }
    const recent = resent.get(read);
    if (recent && now - recent.at < DEX_REUSE_MS) return { ...recent.header, shared: true };
    allow();
    const header = control.resend(read, by);
    resent.set(read, { at: now, header });
    for (const [seq, entry] of resent) if (now - entry.at >= DEX_REUSE_MS) resent.delete(seq);
    return header;
  }

  return { run };
}

export function dexHandlers({ control, clock }: CommandContext): Handlers<typeof dexSchemas> {
  const dexCommands = createDexCommands({ clock });
  function dexControl() {
    if (!control.dex) throw new CommandError(CommandErrorCodes.UNKNOWN_COMMAND, 'this device keeps no audit (no dex control)');
    return control.dex;
  }
  return {
    dex: (body, by) => dexCommands.run('dex', body, dexControl(), by),
    visit: (body, by) => dexCommands.run('visit', body, dexControl(), by),
  };
}
