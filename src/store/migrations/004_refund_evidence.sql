-- Issue 23: a Gerege refund is a `re_…` object seen as its `refund.succeeded` event (webhook or
-- Events API); the intent itself stays `succeeded`. The verified event's refund id and amount are
-- kept with the event, so every reading of the intent can add the refunds made wherever they were.
ALTER TABLE webhook_events ADD COLUMN refund_id TEXT;
ALTER TABLE webhook_events ADD COLUMN refund_amount INTEGER;
CREATE INDEX webhook_events_refunds ON webhook_events (object_id) WHERE refund_id IS NOT NULL;
