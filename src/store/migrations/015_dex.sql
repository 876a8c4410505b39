-- EVA-DTS audit counters (src/dex/ owns these tables and triggers). The counters are running totals
-- kept by triggers on order_history, so they move in the very transaction that records a vend or a
-- refund (no second write path, nothing the money path must remember to call), and they outlive
-- retention, which deletes old orders but never these rows.

-- Per selection (the slot; 'FARE' for a turnstile) and price: paid, delivered vends since the
-- counters began and since the last reset read, and refunds of delivered sales the same way.
CREATE TABLE dex_counters (
  selection      TEXT NOT NULL,
  price          INTEGER NOT NULL,
  item_name      TEXT NOT NULL,                -- the name of the last sale at this price
  vends_init     INTEGER NOT NULL DEFAULT 0,
  value_init     INTEGER NOT NULL DEFAULT 0,
  vends_reset    INTEGER NOT NULL DEFAULT 0,
  value_reset    INTEGER NOT NULL DEFAULT 0,
  refunds_init   INTEGER NOT NULL DEFAULT 0,
  refunded_init  INTEGER NOT NULL DEFAULT 0,
  refunds_reset  INTEGER NOT NULL DEFAULT 0,
  refunded_reset INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (selection, price)
);

-- Every read taken: the readout chain (EA3) and the last files kept for a collector that missed one.
CREATE TABLE dex_reads (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,  -- reads since init
  kind       TEXT NOT NULL CHECK (kind IN ('read', 'reset', 'visit')),
  at         INTEGER NOT NULL,
  by         TEXT NOT NULL,
  text       TEXT,                               -- the DEX file (kept for the last dex.keepReads reads)
  header     TEXT NOT NULL                       -- JSON: totals and what the read saw
);

-- Service visits: who, when, what was filled (JSON slot → count), and the reset read taken.
CREATE TABLE dex_visits (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  at       INTEGER NOT NULL,
  by       TEXT NOT NULL,
  fills    TEXT NOT NULL,
  read_seq INTEGER NOT NULL REFERENCES dex_reads (seq)
);

-- A delivered vend: one history row per order reaches 'vended' (invariant 1).
CREATE TRIGGER dex_count_vend AFTER INSERT ON order_history WHEN NEW.to_state = 'vended'
BEGIN
  INSERT INTO dex_counters (selection, price, item_name, vends_init, value_init, vends_reset, value_reset)
    SELECT coalesce(o.slot, 'FARE'), o.amount, o.item_name, 1, o.amount, 1, o.amount FROM orders o WHERE o.id = NEW.order_id
    ON CONFLICT (selection, price) DO UPDATE SET
      item_name = excluded.item_name,
      vends_init = vends_init + 1, value_init = value_init + excluded.value_init,
      vends_reset = vends_reset + 1, value_reset = value_reset + excluded.value_reset;
END;

-- A refund that completed after the goods went out (an operator's refund of a delivered sale, or
-- one confirmed at the provider): the vend stays counted, the refund is counted beside it.
CREATE TRIGGER dex_count_refund AFTER INSERT ON order_history
  WHEN NEW.to_state = 'refunded'
   AND EXISTS (SELECT 1 FROM order_history h WHERE h.order_id = NEW.order_id AND h.to_state = 'vended')
BEGIN
  INSERT INTO dex_counters (selection, price, item_name, refunds_init, refunded_init, refunds_reset, refunded_reset)
    SELECT coalesce(o.slot, 'FARE'), o.amount, o.item_name, 1, o.amount, 1, o.amount FROM orders o WHERE o.id = NEW.order_id
    ON CONFLICT (selection, price) DO UPDATE SET
      refunds_init = refunds_init + 1, refunded_init = refunded_init + excluded.refunded_init,
      refunds_reset = refunds_reset + 1, refunded_reset = refunded_reset + excluded.refunded_reset;
END;

-- The counters begin with the delivered sales the ledger still holds when this release first runs.
INSERT INTO dex_counters (selection, price, item_name, vends_init, value_init, vends_reset, value_reset)
  SELECT coalesce(o.slot, 'FARE'), o.amount, max(o.item_name), count(*), sum(o.amount), count(*), sum(o.amount)
    FROM orders o WHERE EXISTS (SELECT 1 FROM order_history h WHERE h.order_id = o.id AND h.to_state = 'vended')
    GROUP BY coalesce(o.slot, 'FARE'), o.amount;
UPDATE dex_counters SET
  refunds_init = (SELECT count(*) FROM orders o WHERE coalesce(o.slot, 'FARE') = dex_counters.selection AND o.amount = dex_counters.price
                    AND o.state = 'refunded' AND EXISTS (SELECT 1 FROM order_history h WHERE h.order_id = o.id AND h.to_state = 'vended')),
  refunded_init = price * (SELECT count(*) FROM orders o WHERE coalesce(o.slot, 'FARE') = dex_counters.selection AND o.amount = dex_counters.price
                    AND o.state = 'refunded' AND EXISTS (SELECT 1 FROM order_history h WHERE h.order_id = o.id AND h.to_state = 'vended'));
UPDATE dex_counters SET refunds_reset = refunds_init, refunded_reset = refunded_init;
