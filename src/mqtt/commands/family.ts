import * as z from 'zod';
import type { Clock } from '../../util/clock.js';
import type { CommandResults } from '../command-results.js';
import type { DeviceControl } from '../types.js';

/**
 * A family of commands (families/): the body schema of each and the handler that turns a valid body
 * into the command's row of COMMAND_RESULTS (command-results.ts). table.ts puts the families together
 * into the one table the dispatcher reads; a command without a row there, or answering another shape,
 * does not compile.
 */

export const requestId = z.union([z.string().min(1).max(128), z.number().int()]);

/** What every handler may use: the device, the clock, and the settings that gate a command. */
export interface CommandContext {
  control: DeviceControl;
  clock: Clock;
  allowRemoteVend: boolean;
  /** A selftest run by command also updates the retained `selftest` topic (with its report). */
  onSelftest?(report: unknown): void;
}

/** Body schemas by command name. */
export type Schemas = Record<string, z.ZodType>;

/**
 * One function per command of a family, from its parsed body to its typed answer (`by`: who gave it,
 * as the order history and the catalog's source record it; `orderId`: the order a signed command
 * names by its reference, once found).
 */
export type Handlers<S extends Schemas> = {
  [N in keyof S & keyof CommandResults]: (
    body: z.output<S[N]>,
    by: string,
    orderId: number | null,
  ) => CommandResults[N] | Promise<CommandResults[N]>;
};
