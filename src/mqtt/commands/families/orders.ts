import * as z from 'zod';
import { CommandError, CommandErrorCodes } from '../answers.js';
import { requestId, type CommandContext, type Handlers } from '../family.js';

/**
 * An order as a signed command names it: its global reference `<device>-<db>-<order>-<nonce>`
 * (`orderReference`), never the local order number, which a restored or replaced database gives again.
 */
const order = z.string().min(3).max(200);

/** `cmd/resolve`, `cmd/refund`, `cmd/settle`: a person decides about money (all signed). */
export const orderSchemas = {
  resolve: z.object({ requestId, order, vended: z.boolean() }).strict(),
  refund: z.object({ requestId, order }).strict(),
  // The case is an alarm's name (orphan_invoice/pi_…); ledger/settle.ts checks it and the outcome.
  settle: z.object({ requestId, case: z.string().min(3).max(200), outcome: z.string().min(1).max(32) }).strict(),
} as const;

export function orderHandlers({ control }: CommandContext): Handlers<typeof orderSchemas> {
  return {
    resolve: ({ vended }, by, orderId) => control.resolve(named(orderId), vended, by),
    refund: (_body, by, orderId) => control.refund(named(orderId), by),
    settle: (body, by) => {
      if (!control.settle) throw new CommandError(CommandErrorCodes.UNKNOWN_COMMAND, 'this device cannot settle cases');
      return control.settle(body.case, body.outcome, by);
    },
  };
}

function named(orderId: number | null): number {
  if (orderId === null) throw new CommandError(CommandErrorCodes.BAD_REQUEST, 'order: the order reference is missing');
  return orderId;
}
