import * as z from 'zod';
import { CommandError, CommandErrorCodes } from '../answers.js';
import { requestId, type CommandContext, type Handlers } from '../family.js';

/** `cmd/test_vend`: one test actuation, no money; signed, and only where `mqtt.allowRemoteVend` is set. */
export const testVendSchemas = {
  test_vend: z.object({ requestId, slot: z.string().min(1).max(16).nullable().default(null) }).strict(),
} as const;

export function testVendHandlers({ control, allowRemoteVend }: CommandContext): Handlers<typeof testVendSchemas> {
  return {
    test_vend: ({ slot }, by) => {
      if (!allowRemoteVend) {
        throw new CommandError(
          CommandErrorCodes.REMOTE_VEND_DISABLED,
          'remote vend is disabled on this device; set mqtt.allowRemoteVend: true in its configuration to allow test_vend',
        );
      }
      return control.testVend(slot, by);
    },
  };
}
