import * as z from 'zod';
import { intIn } from './number.js';

/** The audit data (EVA-DTS / DEX) the device writes from its ledger for the operator's VMS. */
export const dexSchema = () =>
  z.strictObject({
    /** A read every this many seconds, published on `<prefix>/<device>/dex` (0: none). */
    readEverySec: intIn(0, 604_800, 0),
    /** A read every day at this local time, `HH:MM` ('' : none). */
    dailyAt: z
      .string()
      .regex(/^$|^([01]\d|2[0-3]):[0-5]\d$/, 'a local time HH:MM (24 h), e.g. 06:30, or empty for none')
      .default(''),
    /** How many reads keep their file on the device, for a collector that missed one. */
    keepReads: intIn(1, 1_000, 50),
  });

export type DexSettings = z.infer<ReturnType<typeof dexSchema>>;
