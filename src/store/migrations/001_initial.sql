-- vendgate initial schema. Table names are part of the contract (selftest and operators read them).

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE orders (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  reference        TEXT NOT NULL UNIQUE,          -- <device.id>-<db>-<id>
  attempt          INTEGER NOT NULL DEFAULT 1,
  idempotency_key  TEXT NOT NULL UNIQUE,          -- <reference>-pay, attempt n>1: -pay-<n>
  source           TEXT NOT NULL,                 -- kiosk | button | mdb | mqtt | cli
  slot             TEXT,
  item_name        TEXT NOT NULL,
  amount           INTEGER NOT NULL CHECK (amount > 0),
  currency         TEXT NOT NULL,
  livemode         INTEGER NOT NULL CHECK (livemode IN (0, 1)),
  provider         TEXT NOT NULL,
  capture_mode     TEXT NOT NULL CHECK (capture_mode IN ('automatic', 'manual')),
  state            TEXT NOT NULL,
  invoice_id       TEXT UNIQUE,
  pay_url          TEXT,
  expires_at       INTEGER,                       -- ms since epoch
  error_code       TEXT,
  error_message    TEXT,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL,
  paid_at          INTEGER,
  vended_at        INTEGER,
  refunded_at      INTEGER,
  closed_at        INTEGER
);
CREATE INDEX orders_state ON orders (state);
CREATE INDEX orders_created_at ON orders (created_at);

-- Every invoice ever created for an order (one per attempt), so a payment of an earlier attempt's
-- invoice is still recognised (and refunded) after a new attempt replaced it on the order row.
CREATE TABLE order_invoices (
  invoice_id TEXT PRIMARY KEY,
  order_id   INTEGER NOT NULL REFERENCES orders (id),
  attempt    INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE order_history (
  order_id   INTEGER NOT NULL REFERENCES orders (id),
  at         INTEGER NOT NULL,
  from_state TEXT,
  to_state   TEXT NOT NULL,
  reason     TEXT NOT NULL
);
CREATE INDEX order_history_order ON order_history (order_id);

CREATE TABLE invoice_status_ledger (
  invoice_id      TEXT NOT NULL,
  status          TEXT NOT NULL,                  -- canonical status
  order_id        INTEGER NOT NULL REFERENCES orders (id),
  provider_status TEXT NOT NULL,
  channel         TEXT NOT NULL,                  -- poll | webhook | backfill | create | replay | refund
  observed_at     INTEGER NOT NULL,
  evidence        TEXT NOT NULL,                  -- JSON
  PRIMARY KEY (invoice_id, status)
);
CREATE INDEX invoice_status_ledger_observed ON invoice_status_ledger (observed_at);

CREATE TABLE webhook_events (
  event_id      TEXT PRIMARY KEY,
  provider      TEXT NOT NULL,
  type          TEXT NOT NULL,
  object_id     TEXT,
  livemode      INTEGER,
  raw_body      BLOB NOT NULL,
  source        TEXT NOT NULL DEFAULT 'webhook',   -- webhook | backfill
  received_at   INTEGER NOT NULL,
  processed_at  INTEGER,
  attempts      INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  last_error    TEXT
);
CREATE INDEX webhook_events_unprocessed ON webhook_events (processed_at) WHERE processed_at IS NULL;
CREATE INDEX webhook_events_received ON webhook_events (received_at);

CREATE TABLE vend_jobs (
  order_id     INTEGER PRIMARY KEY REFERENCES orders (id),
  state        TEXT NOT NULL CHECK (state IN ('queued', 'firing', 'done', 'failed', 'uncertain', 'resolved')),
  slot         TEXT,
  created_at   INTEGER NOT NULL,
  claimed_at   INTEGER,
  finished_at  INTEGER,
  outcome      TEXT,                              -- vended | failed | not_passed | resolved_vended | resolved_not_vended
  detail       TEXT,
  capture_state TEXT                              -- manual capture: pending | done | null
);
CREATE INDEX vend_jobs_state ON vend_jobs (state);

-- Keyed by invoice: a refund belongs to one paid invoice (an order has one invoice per attempt).
CREATE TABLE refunds (
  invoice_id        TEXT PRIMARY KEY,
  order_id          INTEGER NOT NULL REFERENCES orders (id),
  idempotency_key   TEXT NOT NULL UNIQUE,
  kind              TEXT NOT NULL CHECK (kind IN ('refund', 'void')),   -- void = cancel an authorization
  amount            INTEGER NOT NULL,
  reason            TEXT NOT NULL,
  state             TEXT NOT NULL CHECK (state IN ('requested', 'sending', 'pending', 'unknown', 'succeeded', 'failed')),
  provider_refund_id TEXT,
  attempts          INTEGER NOT NULL DEFAULT 0,
  next_check_at     INTEGER,
  last_error        TEXT,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL,
  alarmed_at        INTEGER
);
CREATE INDEX refunds_state ON refunds (state);
CREATE INDEX refunds_order ON refunds (order_id);

CREATE TABLE outbox (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,   -- per-device monotonic
  id         TEXT NOT NULL UNIQUE,
  kind       TEXT NOT NULL CHECK (kind IN ('event', 'alarm')),
  topic      TEXT NOT NULL,                       -- relative to <prefix>/<deviceId>/
  payload    TEXT NOT NULL,                       -- '' clears a retained alarm
  retain     INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);

CREATE TABLE alarms (
  name      TEXT PRIMARY KEY,                     -- e.g. vend_uncertain/42
  severity  TEXT NOT NULL,
  message   TEXT NOT NULL,
  detail    TEXT NOT NULL,                        -- JSON
  raised_at INTEGER NOT NULL
);

CREATE TABLE counters (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
