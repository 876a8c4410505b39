-- Refunds seen as events: a Gerege refund is a `re_…` object seen as its `refund.succeeded` event (webhook or
-- Events API); the intent itself stays `succeeded`. The verified event's refund id and amount are
-- kept with the event, so every reading of the intent can add the refunds made wherever they were.
ALTER TABLE webhook_events ADD COLUMN refund_id TEXT;
ALTER TABLE webhook_events ADD COLUMN refund_amount INTEGER;
CREATE INDEX webhook_events_refunds ON webhook_events (object_id) WHERE refund_id IS NOT NULL;

-- The orphan sweep (ledger/orphans.ts): the reference an event's invoice carries, so that an invoice
-- under this device's reference prefix that no order knows (its record lost: a power cut before the
-- create answer was stored, a restored database) is found and settled.
ALTER TABLE webhook_events ADD COLUMN reference TEXT;
CREATE INDEX webhook_events_reference ON webhook_events (reference) WHERE reference IS NOT NULL;
CREATE TABLE orphan_invoices (
  invoice_id   TEXT PRIMARY KEY,
  reference    TEXT NOT NULL,
  -- refunding: the refund claim is on disk, the POST follows; refunded | closed: settled; person: an alarm for a person
  state        TEXT NOT NULL,
  amount       INTEGER NOT NULL,
  refund_key   TEXT,
  detail       TEXT,
  found_at     INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
);
