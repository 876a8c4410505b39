import Database from 'better-sqlite3';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { ErrorCodes, VendgateError } from '../../util/errors.js';
import { PAGE_CACHE_KIB, prepared } from '../../store/index.js';
import {
  ProviderError,
  WebhookVerificationError,
  type CanonicalStatus,
  type CreateInvoiceRequest,
  type Invoice,
  type PaymentProvider,
  type RefundResult,
  type VerifiedWebhook,
  type WebhookEvent,
} from '../types.js';
import { signSandboxPayload, verifySandboxSignature, SANDBOX_SIGNATURE_HEADER } from './signature.js';

interface Row {
  id: string;
  idempotency_key: string;
  body_hash: string;
  reference: string;
  amount: number;
  currency: string;
  description: string;
  status: CanonicalStatus;
  capture_method: string;
  created_at: number;
  expires_at: number;
}

function parseEvent(rawBody: Buffer): WebhookEvent {
  let body: { id?: unknown; type?: unknown; livemode?: unknown; created?: unknown; data?: { object?: { id?: unknown } } };
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('malformed_body', 'body is not JSON');
  }
  if (typeof body?.id !== 'string' || typeof body.type !== 'string')
    throw new WebhookVerificationError('malformed_body', 'event needs id and type');
  const objectId = body.data?.object?.id;
  return {
    eventId: body.id,
    type: body.type,
    objectId: typeof objectId === 'string' ? objectId : null,
    livemode: typeof body.livemode === 'boolean' ? body.livemode : null,
    createdAt: typeof body.created === 'number' ? body.created * 1000 : null,
  };
}

export interface SandboxSettings {
  /** Its own SQLite file: the sandbox is "the provider" and outlives a crash of the gateway. */
  dbPath: string;
  /** Builds the pay page URL the QR encodes. */
  payUrl: (invoiceId: string) => string;
  webhookSecret: string;
}

/** A signed webhook ready to POST to our own listener. */
export interface SandboxDelivery {
  rawBody: Buffer;
  headers: Record<string, string>;
}

/** An invoice as the sandbox's pay page shows it. */
export interface SandboxInvoiceView {
  id: string;
  amount: number;
  currency: string;
  reference: string;
  status: CanonicalStatus;
  expiresAt: number;
}

/** The demo's provider, as the app, `vendgate replay` and the selftest use it. */
export interface SandboxProvider {
  /** The PaymentProvider the money path talks to (livemode always false). */
  provider: PaymentProvider;
  /** The demo's pay page and button. */
  payments: {
    /** The invoice for the pay page, or null when there is none. */
    describe(invoiceId: string): SandboxInvoiceView | null;
    /** Pays a pending invoice (authorizes it in manual-capture mode); throws ORDER_NOT_FOUND or ORDER_STATE (paid, expired). */
    pay(invoiceId: string): Promise<void>;
  };
  /** Each status change as a signed webhook (the app POSTs it to its own webhook listener). */
  onDelivery(listener: (delivery: SandboxDelivery) => void): void;
  /** Closes its SQLite file. */
  close(): void;
}

/**
 * The demo's provider, in process: invoices, a pay page, idempotency by key, expiry, refunds and
 * signed webhooks, so `npm start` needs nothing outside the machine. Never used with real money
 * (livemode is always false).
 */
export function createSandboxProvider(deps: { clock: Clock; logger: Logger }, settings: SandboxSettings): SandboxProvider {
  const log = deps.logger.child({ module: 'sandbox' });
  let db: Database.Database | null = null;
  const listeners: ((delivery: SandboxDelivery) => void)[] = [];

  function open(): Database.Database {
    if (db) return db;
    mkdirSync(dirname(settings.dbPath), { recursive: true });
    db = new Database(settings.dbPath);
    db.pragma('journal_mode = WAL');
    // The demo's provider runs in the device's process: its cache counts in the device's memory.
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    db.exec(`CREATE TABLE IF NOT EXISTS sandbox_invoices (
      id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, body_hash TEXT NOT NULL, reference TEXT NOT NULL,
      amount INTEGER NOT NULL, currency TEXT NOT NULL, description TEXT NOT NULL, status TEXT NOT NULL,
      capture_method TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS sandbox_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, created INTEGER NOT NULL, body TEXT NOT NULL);`);
    return db;
  }

  function read(id: string): Row {
    const row = prepared(open(), 'SELECT * FROM sandbox_invoices WHERE id = ?').get(id) as Row | undefined;
    if (!row) throw new ProviderError('not_found', `sandbox has no invoice ${id}`, { httpStatus: 404, providerCode: 'not_found' });
    if (row.status === 'pending' && row.expires_at <= deps.clock.now()) return setStatus(row, 'expired');
    return row;
  }

  function toInvoice(row: Row, replayed = false): Invoice {
    return {
      id: row.id,
      status: row.status,
      providerStatus: row.status,
      amount: row.amount,
      currency: row.currency,
      reference: row.reference,
      livemode: false,
      payUrl: settings.payUrl(row.id),
      expiresAt: row.expires_at,
      // Only a replayed key says so, as the adapters do (a new invoice or a GET has no `replayed`).
      ...(replayed ? { replayed: true } : {}),
      refundedAmount: row.status === 'refunded' ? row.amount : 0,
      createdAt: row.created_at ?? undefined,
    };
  }

  function setStatus(row: Row, status: CanonicalStatus): Row {
    const next = { ...row, status };
    const body = Buffer.from(
      JSON.stringify({
        id: `evt_${randomBytes(8).toString('hex')}`,
        object: 'event',
        type: `invoice.${status}`,
        livemode: false,
        created: Math.floor(deps.clock.now() / 1000),
        data: { object: toInvoice(next) },
      }),
    );
    const event = JSON.parse(body.toString()) as { id: string; created: number };
    open().transaction(() => {
      prepared(open(), 'UPDATE sandbox_invoices SET status = ? WHERE id = ?').run(status, row.id);
      prepared(open(), 'INSERT INTO sandbox_events (id, created, body) VALUES (?, ?, ?)').run(event.id, event.created, body.toString());
    })();
    const headers = {
      'content-type': 'application/json',
      'sandbox-event-id': event.id,
      [SANDBOX_SIGNATURE_HEADER]: signSandboxPayload(body, settings.webhookSecret, Math.floor(deps.clock.now() / 1000)),
    };
    for (const listener of listeners) listener({ rawBody: body, headers });
    return next;
  }

  const provider: PaymentProvider = {
    name: 'sandbox',
    async createInvoice(request: CreateInvoiceRequest) {
      const bodyHash = createHash('sha256')
        .update(JSON.stringify([request.reference, request.amount, request.currency, request.description, request.captureMode]))
        .digest('hex');
      const existing = prepared(open(), 'SELECT * FROM sandbox_invoices WHERE idempotency_key = ?').get(request.idempotencyKey) as
        Row | undefined;
      if (existing) {
        if (existing.body_hash !== bodyHash)
          throw new ProviderError('conflict', 'idempotency key reused with a different body', {
            httpStatus: 409,
            providerCode: 'idempotency_conflict',
          });
        return toInvoice(read(existing.id), true);
      }
      const now = deps.clock.now();
      const row: Row = {
        id: `sb_${randomBytes(8).toString('hex')}`,
        idempotency_key: request.idempotencyKey,
        body_hash: bodyHash,
        reference: request.reference,
        amount: request.amount,
        currency: request.currency,
        description: request.description,
        status: 'pending',
        capture_method: request.captureMode,
        created_at: now,
        expires_at: now + request.expiresInSec * 1000,
      };
      prepared(
        open(),
        `INSERT INTO sandbox_invoices VALUES (@id, @idempotency_key, @body_hash, @reference, @amount, @currency,
        @description, @status, @capture_method, @created_at, @expires_at)`,
      ).run(row);
      return toInvoice(row);
    },
    async getInvoice(id) {
      return toInvoice(read(id));
    },
    async cancelInvoice(id) {
      const row = read(id);
      return toInvoice(row.status === 'pending' || row.status === 'authorized' ? setStatus(row, 'canceled') : row);
    },
    async captureInvoice(id) {
      const row = read(id);
      return toInvoice(row.status === 'authorized' ? setStatus(row, 'paid') : row);
    },
    async refund(request): Promise<RefundResult> {
      const row = read(request.invoiceId);
      if (row.status === 'refunded') return { status: 'succeeded', refundId: `re_${row.id}` };
      if (row.status !== 'paid') return { status: 'failed', detail: `invoice is ${row.status}` };
      // Whole invoices only: a request for part is refused, never widened to the whole amount.
      if (request.amount !== row.amount) return { status: 'failed', detail: `the sandbox refunds the whole ${row.amount} only` };
      setStatus(row, 'refunded');
      return { status: 'succeeded', refundId: `re_${row.id}` };
    },
    verifyWebhook(rawBody, headers, context): VerifiedWebhook {
      const header = headers[SANDBOX_SIGNATURE_HEADER];
      const secretIndex = verifySandboxSignature(rawBody, Array.isArray(header) ? header[0] : header, context);
      return { event: parseEvent(rawBody), secretIndex };
    },
    async listEvents(query) {
      const after = query.startingAfter
        ? ((prepared(open(), 'SELECT seq FROM sandbox_events WHERE id = ?').get(query.startingAfter) as { seq: number } | undefined)?.seq ??
          0)
        : 0;
      const rows = prepared(open(), 'SELECT id, body FROM sandbox_events WHERE seq > ? AND created >= ? ORDER BY seq LIMIT 101').all(
        after,
        query.createdAfterSec ?? 0,
      ) as { id: string; body: string }[];
      const page = rows.slice(0, 100);
      return {
        // Read over the authenticated API, not a webhook: nothing to verify.
        events: page.map((r) => ({ rawBody: Buffer.from(r.body), event: parseEvent(Buffer.from(r.body)) })),
        hasMore: rows.length > 100,
      };
    },
    async checkCredentials() {
      open();
      return { detail: 'sandbox provider (in process, no real money)', serverDate: deps.clock.now() };
    },
  };

  return {
    provider,
    /** The demo's pay page and button. */
    payments: {
      describe(invoiceId: string) {
        try {
          const row = read(invoiceId);
          return {
            id: row.id,
            amount: row.amount,
            currency: row.currency,
            reference: row.reference,
            status: row.status,
            expiresAt: row.expires_at,
          };
        } catch {
          return null;
        }
      },
      async pay(invoiceId: string) {
        let row: Row;
        try {
          row = read(invoiceId);
        } catch {
          throw new VendgateError(ErrorCodes.ORDER_NOT_FOUND, `no invoice ${invoiceId}`);
        }
        // Like QutPay: a canceled QR may still be paid until it expires.
        if (row.status !== 'pending' && row.status !== 'canceled') {
          throw new VendgateError(ErrorCodes.ORDER_STATE, `this invoice is ${row.status} and cannot be paid`);
        }
        if (row.expires_at <= deps.clock.now()) throw new VendgateError(ErrorCodes.ORDER_STATE, 'this invoice has expired');
        setStatus(row, row.capture_method === 'manual' ? 'authorized' : 'paid');
        log.info({ invoiceId }, 'sandbox invoice paid');
      },
    },
    /** Each status change as a signed webhook (the app POSTs it to its own webhook listener). */
    onDelivery(listener: (delivery: SandboxDelivery) => void): void {
      listeners.push(listener);
    },
    close(): void {
      db?.close();
      db = null;
    },
  };
}
