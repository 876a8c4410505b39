-- Refund evidence counts only when the provider confirms it (src/channels/webhook/refund-claims.ts).
-- A refund an event body reports is a claim until the provider's Events API, read with the device's
-- own credentials, lists the same event with the same refund: then `refund_confirmed_at` is set. An
-- event read from the Events API itself needs no confirmation. `event_created_at` (ms, the body's
-- own time) is where the confirmation starts reading.
ALTER TABLE webhook_events ADD COLUMN refund_confirmed_at INTEGER;
ALTER TABLE webhook_events ADD COLUMN event_created_at INTEGER;

-- A person's settlement of a parked case (src/ledger/settle.ts owns this table): an orphan invoice,
-- an order a person had to check (invoice_recovered, payment_mismatch, refunded_after_vend), a
-- forged event. One row per case, written in the transaction that closes its alarm; a second
-- settlement of the same case is answered from this row and does nothing again.
CREATE TABLE settled_cases (
  name        TEXT PRIMARY KEY,              -- the alarm's name, e.g. orphan_invoice/pi_…
  outcome     TEXT NOT NULL,                 -- refund | goods-went-out | not-ours | checked
  state       TEXT NOT NULL,                 -- settling (a refund's claim, its POST follows) | done | unknown
  by_whom     TEXT NOT NULL,
  detail      TEXT,
  settled_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);
