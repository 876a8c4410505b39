import { z } from 'zod';

const listener = (host: string, port: number) =>
  z.object({
    host: z.string().min(1).default(host),
    port: z.number().int().min(0).max(65_535).default(port),
  });

export const pollSchema = z.object({
  intervalMs: z.number().int().min(100).max(60_000).default(2_000),
  /** Longest wait between polls after errors. */
  maxBackoffMs: z.number().int().min(1_000).max(300_000).default(30_000),
  /** How long a closed (canceled/expired by us) invoice is still polled for a late payment. */
  lateGraceSec: z.number().int().min(0).max(86_400).default(600),
});

export const httpSchema = z.object({
  webhook: listener('0.0.0.0', 8787).extend({
    /** Public URL of the webhook listener through the tunnel (selftest round trip). */
    publicUrl: z.url().optional(),
    bodyLimitBytes: z.number().int().min(1_024).max(1_048_576).default(65_536),
    /** First wait before the worker retries an event whose GET failed; doubles per attempt. */
    retryBaseMs: z.number().int().min(10).max(60_000).default(1_000),
    /** Longest wait between two retries of one event. */
    retryMaxMs: z.number().int().min(100).max(3_600_000).default(300_000),
    /** An event that failed this many times raises the webhook_stuck alarm (and keeps being retried). */
    alarmAfterAttempts: z.number().int().min(1).max(1_000).default(5),
    /** The poller found a payment and no webhook for it came within this: run the Events backfill. */
    silenceGraceSec: z.number().int().min(1).max(3_600).default(30),
    /** A device without a backfill cursor reads the Events API this far back. */
    backfillLookbackSec: z.number().int().min(60).max(2_592_000).default(86_400),
  }).prefault({}),
  local: listener('127.0.0.1', 8080).prefault({}),
});

export const storageSchema = z.object({
  path: z.string().min(1).default('./data/vendgate.db'),
  retentionDays: z.number().int().min(1).max(3_650).default(90),
});

export const logSchema = z.object({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export const policySchema = z.object({
  /** Turnstile: what to do when nobody passed after the gate opened. */
  notPassed: z.enum(['refund', 'keep']).default('refund'),
});

export const kioskSchema = z.object({
  language: z.enum(['mn', 'kk', 'ru', 'en']).default('en'),
  /** Turnstile: show a standing QR that renews itself before it expires. */
  autoStart: z.boolean().default(false),
  /** Seconds the result screen stays before the page returns to idle. */
  resultScreenSec: z.number().int().min(1).max(120).default(6),
  /** Shown on every screen beside the machine id: whom a customer calls (a phone number, a URL). */
  supportContact: z.string().trim().min(1).max(80).optional(),
  /** The apps that can pay this provider's QR, as the customer knows them; absent: the provider's own line. */
  paymentApps: z.array(z.string().trim().min(1).max(40)).min(1).max(8).optional(),
});
