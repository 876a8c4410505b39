import * as z from 'zod';
import { intIn } from './number.js';
import { LOCAL_LISTENER_DEFAULTS, WEBHOOK_LISTENER_DEFAULTS, type ListenerLimits } from '../../util/http-listener.js';

/** Address and the limits that keep slow or idle clients from holding the listener open. */
const listener = (host: string, port: number, limits: Readonly<ListenerLimits>) =>
  z.strictObject({
    host: z.string().min(1).default(host),
    port: intIn(0, 65_535, port),
    headersTimeoutMs: intIn(500, 120_000, limits.headersTimeoutMs),
    /** The whole request, body included: a body dripped byte by byte is cut after this. */
    requestTimeoutMs: intIn(1_000, 300_000, limits.requestTimeoutMs),
    idleTimeoutMs: intIn(1_000, 600_000, limits.idleTimeoutMs),
    keepAliveTimeoutMs: intIn(100, 120_000, limits.keepAliveTimeoutMs),
    maxRequestsPerSocket: intIn(0, 1_000_000, limits.maxRequestsPerSocket),
    maxConnections: intIn(0, 100_000, limits.maxConnections),
  });

export const pollSchema = () =>
  z.strictObject({
    intervalMs: intIn(100, 60_000, 2_000),
    /** Longest wait between polls after errors. */
    maxBackoffMs: intIn(1_000, 300_000, 30_000),
    /**
     * A payment first seen up to this long after its QR expired is still vended (the customer may be
     * waiting); later it is refunded (the customer has gone). Every invoice is read until the
     * provider's final answer either way: no local timer stops following one.
     */
    lateGraceSec: intIn(0, 86_400, 120),
    /** How often the reconciliation loop compares recent invoices with the provider. */
    reconcileEveryMin: intIn(1, 1_440, 60),
    /** How far back the reconciliation loop looks. */
    reconcileDays: intIn(1, 90, 7),
    /** At most this many provider reads per hour for reconciliation (it never competes with sales). */
    reconcileReadsPerHour: intIn(1, 10_000, 120),
  });

export const httpSchema = () =>
  z
    .object({
      webhook: listener('127.0.0.1', 8787, WEBHOOK_LISTENER_DEFAULTS)
        .extend({
          /** Public URL of the webhook listener through the tunnel (selftest round trip). */
          publicUrl: z.url().optional(),
          bodyLimitBytes: intIn(1_024, 1_048_576, 65_536),
          /** First wait before the worker retries an event whose GET failed; doubles per attempt. */
          retryBaseMs: intIn(10, 60_000, 1_000),
          /** Longest wait between two retries of one event. */
          retryMaxMs: intIn(100, 3_600_000, 300_000),
          /** An event that failed this many times raises the webhook_stuck alarm (and keeps being retried). */
          alarmAfterAttempts: intIn(1, 1_000, 5),
          /** The poller found a payment and no webhook for it came within this: run the Events backfill. */
          silenceGraceSec: intIn(1, 3_600, 30),
          /** A device without a backfill cursor reads the Events API this far back. */
          backfillLookbackSec: intIn(60, 2_592_000, 86_400),
        })
        .prefault({}),
      local: listener('127.0.0.1', 8080, LOCAL_LISTENER_DEFAULTS)
        .extend({
          /** Host names the kiosk page may be opened under besides 127.0.0.1, localhost and ::1 (DNS rebinding guard). */
          allowedHosts: z
            .array(
              z
                .string()
                .min(1)
                .regex(/^[A-Za-z0-9.-]+$/, 'a host name such as kiosk.local, without port or scheme'),
            )
            .default([]),
          /** A second order press for the same item within this returns the first order (one invoice, one QR). */
          doublePressWindowMs: intIn(0, 60_000, 3_000),
          /** Orders (invoices) the local API creates at most per minute; beyond it 429. */
          ordersPerMinute: intIn(1, 1_000_000, 10),
        })
        .prefault({}),
    })
    .strict();

export const storageSchema = () =>
  z.strictObject({
    path: z.string().min(1).default('./data/vendgate.db'),
    retentionDays: intIn(1, 3_650, 90),
    /** A file of this many MiB beside the database, given back when the disk fills (0: none). */
    ballastMb: intIn(0, 1_024, 8),
  });

export const logSchema = () =>
  z.strictObject({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  });

export const policySchema = () =>
  z.strictObject({
    /** Turnstile: what to do when nobody passed after the gate opened. */
    notPassed: z.enum(['refund', 'keep']).default('refund'),
  });

export const kioskSchema = () =>
  z.strictObject({
    language: z.enum(['mn', 'kk', 'ru', 'en']).default('en'),
    /** Turnstile: show a standing QR that renews itself before it expires. */
    autoStart: z.boolean().default(false),
    /** Seconds the result screen stays before the page returns to idle. */
    resultScreenSec: intIn(1, 120, 6),
    /** Shown on every screen beside the machine id: whom a customer calls (a phone number, a URL). */
    supportContact: z.string().trim().min(1).max(80).optional(),
    /**
     * The app schemes whose deep links (QPay's bank-app links) the pay screen offers to a customer on a
     * phone, beside https links; absent: the Mongolian bank apps QPay links to (orders/app-links.ts).
     */
    appLinkSchemes: z
      .array(z.string().regex(/^[a-z][a-z0-9+.-]{0,31}$/, 'a URL scheme such as khanbank'))
      .max(64)
      .optional(),
    /** The apps that can pay this provider's QR, as the customer knows them; absent: the provider's own line. */
    paymentApps: z.array(z.string().trim().min(1).max(40)).min(1).max(8).optional(),
    /** The service menu's PIN (VENDGATE_SERVICE_PIN in secrets.env only); absent: the menu is off. */
    servicePin: z
      .string()
      .regex(/^[0-9]{6,12}$/, 'the service PIN is 6 to 12 digits (VENDGATE_SERVICE_PIN)')
      .optional(),
  });
