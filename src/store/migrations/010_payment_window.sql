-- The customer's payment window on this device's own clock (orders/window.ts): when it opened for
-- this invoice. For an invoice the provider made for the create call, the moment the call was sent;
-- for a replayed key, the moment the attempt's key was fixed. With the lifetime the attempt asked
-- for, it decides when the device closes an unpaid order and when a payment is "too late": no
-- provider clock and no HTTP Date header enter. NULL (rows from before): created_at, the attach.
ALTER TABLE order_invoices ADD COLUMN window_opened_at INTEGER;
