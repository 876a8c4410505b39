import type { FaultConfig, FaultName } from './types.js';
import type { Random } from './random.js';

export const NO_FAULTS: Readonly<FaultConfig> = Object.freeze({
  duplicateWebhook: 0,
  reorderWebhooks: 0,
  delayWebhookMs: 0,
  dropWebhook: 0,
  lateStaleEvent: 0,
  rateLimit: 0,
  serverError: 0,
  timeout: 0,
  lostResponse: 0,
  refundUnknown: 0,
  webhookOutage: false,
});

const FAULT_NAMES = Object.keys(NO_FAULTS) as FaultName[];

/** Every problem with a partial fault config, as `key: message`; empty when it is valid. */
export function faultProblems(input: unknown): string[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return ['faults must be a JSON object'];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (!FAULT_NAMES.includes(key as FaultName)) {
      problems.push(`${key}: unknown fault; known: ${FAULT_NAMES.join(', ')}`);
    } else if (key === 'webhookOutage') {
      if (typeof value !== 'boolean') problems.push(`${key}: must be true or false`);
    } else if (key === 'delayWebhookMs') {
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 60_000)
        problems.push(`${key}: must be an integer 0..60000`);
    } else if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
      problems.push(`${key}: must be a probability 0..1`);
    }
  }
  return problems;
}

/** What the faults decided for one provider API request. Drawn up front in a fixed order. */
export interface RequestFaults {
  reject: { fault: 'rateLimit' | 'serverError' | 'timeout'; status?: number } | null;
  lostResponse: boolean;
}

export function drawRequestFaults(faults: FaultConfig, random: Random): RequestFaults {
  const rateLimit = random.chance(faults.rateLimit);
  const serverError = random.chance(faults.serverError);
  const serverStatus = serverError ? ([500, 502, 503] as const)[random.int(3)] : undefined;
  const timeout = random.chance(faults.timeout);
  const lostResponse = random.chance(faults.lostResponse);
  let reject: RequestFaults['reject'] = null;
  if (rateLimit) reject = { fault: 'rateLimit', status: 429 };
  else if (serverError) reject = { fault: 'serverError', status: serverStatus! };
  else if (timeout) reject = { fault: 'timeout' };
  return { reject, lostResponse: reject === null && lostResponse };
}
