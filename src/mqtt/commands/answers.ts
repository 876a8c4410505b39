import { ErrorCodes } from '../../util/errors.js';
import { EnvelopeErrorCodes } from './envelope.js';
import type { CommandResults } from '../command-results.js';
import type { CommandAudit } from '../types.js';

/**
 * Codes of command results that are not errors of the money path. Stable: operators' scripts match
 * on them. (To be listed with the others in util/errors.ts and docs/errors.md.)
 */
export const CommandErrorCodes = {
  BAD_REQUEST: ErrorCodes.BAD_REQUEST,
  UNKNOWN_COMMAND: 'VG_ERR_UNKNOWN_COMMAND',
  REMOTE_VEND_DISABLED: 'VG_ERR_REMOTE_VEND_DISABLED',
  COMMAND_FAILED: 'VG_ERR_COMMAND_FAILED',
  /** The request id was used before: the first answer is repeated, nothing runs again. */
  REPLAYED: ErrorCodes.COMMAND_REPLAYED,
  ...EnvelopeErrorCodes,
} as const;

/** An answer on `cmd/<name>/result` (before the device signs it); `result` is the command's row of COMMAND_RESULTS. */
export type CommandResult =
  | { requestId: string | number | null; ok: true; result: CommandResults[keyof CommandResults] | null; replay?: true }
  | {
      requestId: string | number | null;
      ok: false;
      error: { code: string; message: string; details?: Record<string, unknown> };
      replay?: true;
    };

/** A refusal a command's handler throws: its code and message are the answer. */
export class CommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}

export function failure(id: string | number | null, code: string, message: string, details?: Record<string, unknown>): CommandResult {
  return { requestId: id, ok: false, error: { code, message, ...(details ? { details } : {}) } };
}

/** Who gave a command, as far as it can be believed: its audit record besides the outcome. */
export type Origin = Pick<CommandAudit, 'requestId' | 'keyId' | 'verified'> & { orderId?: number };

/** A command's answer and who gave it: the dispatcher writes one audit record per message from both. */
export interface Handled {
  result: CommandResult;
  origin: Origin;
}

export const UNVERIFIED: Origin = { requestId: null, keyId: null, verified: false };
