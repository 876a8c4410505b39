-- Fiscal receipts (src/fiscal/receipts.ts owns this table). One row per sale (a delivered vend) and
-- one per return (a refund of a receipted sale), written in the same transaction that settles the
-- vend or completes the refund, with its idempotency key and request fixed there: every attempt
-- sends exactly that. The screen's QR data and eBarimt's lottery number are never stored here:
-- only what a return needs (the register's receipt id and date).
CREATE TABLE receipts (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  order_id      INTEGER NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('sale', 'return')),
  key           TEXT NOT NULL UNIQUE,       -- the register's idempotency key: <reference>-sale / <reference>-return
  register      TEXT NOT NULL,              -- which register it was queued for (sandbox | ebarimt | webkassa)
  state         TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'unknown', 'issued', 'rejected', 'canceled')),
  attempts      INTEGER NOT NULL DEFAULT 0, -- issue calls claimed (lookups are not counted)
  next_at       INTEGER NOT NULL,           -- ms since epoch: when the worker looks at it next
  request_json  TEXT NOT NULL,              -- the ReceiptRequest, fixed at the row's creation
  register_id   TEXT,                       -- the register's receipt id (issued)
  register_date TEXT,                       -- the register's own date of it, as a return wants it back
  offline       INTEGER,                    -- 1: the register took it offline
  created_at    INTEGER NOT NULL,
  claimed_at    INTEGER,
  issued_at     INTEGER,
  last_error    TEXT,
  alarmed_at    INTEGER,                    -- the receipt_unknown / receipt_rejected alarm was raised
  UNIQUE (order_id, kind)
);
CREATE INDEX receipts_due ON receipts (state, next_at);
CREATE INDEX receipts_created_at ON receipts (created_at);
