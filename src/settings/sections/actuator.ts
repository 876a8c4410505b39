import { z } from 'zod';

/** Owned by the hardware issue: relay (GPIO), serial (line / MDB), sim. */
export const actuatorSchema = z.object({
  kind: z.enum(['sim', 'relay', 'serial']).default('sim'),
  sim: z.object({
    logPath: z.string().min(1).default('./data/actuations.jsonl'),
    /** How long one simulated actuation takes. */
    durationMs: z.number().int().min(0).max(60_000).default(50),
    /** Development only: every actuation fails, hangs or (turnstile) nobody passes. */
    failMode: z.enum(['none', 'fail', 'hang', 'not_passed']).default('none'),
  }).prefault({}),
  /** Longest a vend may take before it is treated as failed. */
  vendTimeoutMs: z.number().int().min(100).max(600_000).default(30_000),
});

export const inputsSchema = z.object({}).loose();
