-- The edges of a payment's life: no invoice is left behind unanswered.

-- The exact create request of the order's current attempt, fixed when its key is (invariant 4: a
-- create resumed after a restart is byte-identical, whatever the settings say by then).
ALTER TABLE orders ADD COLUMN create_request TEXT;

-- Every invoice is followed until the provider gives a final answer; reconciliation marks when it
-- last compared the invoice with the provider.
ALTER TABLE order_invoices ADD COLUMN settled_at INTEGER;
ALTER TABLE order_invoices ADD COLUMN reconciled_at INTEGER;
CREATE INDEX order_invoices_unsettled ON order_invoices (created_at) WHERE settled_at IS NULL;

-- Manual capture: claimed durably before the call ('sending'), backed off on failure, given up
-- ('failed', one alarm) when the provider says it can never succeed.
ALTER TABLE vend_jobs ADD COLUMN capture_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE vend_jobs ADD COLUMN next_capture_at INTEGER;

-- Invoices from before this migration: followed on only where the old poller would still have read
-- them (waiting, or closed within the last hour without a final status); the reconciliation loop
-- compares the rest with the provider.
UPDATE order_invoices SET settled_at = created_at
 WHERE NOT EXISTS (
   SELECT 1 FROM orders o
    WHERE o.id = order_invoices.order_id
      AND (o.state = 'awaiting_payment'
           OR (o.state IN ('canceled', 'expired', 'failed')
               AND coalesce(o.closed_at, 0) > CAST(strftime('%s', 'now') AS INTEGER) * 1000 - 3600000
               AND NOT EXISTS (SELECT 1 FROM invoice_status_ledger l
                                WHERE l.invoice_id = order_invoices.invoice_id AND l.status IN ('paid', 'authorized', 'expired', 'refunded')))));
