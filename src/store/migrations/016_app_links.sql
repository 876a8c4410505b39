-- The bank-app deep links a provider answered with an invoice (QPay's urls[]), for a customer who
-- pays on the phone held at the machine. JSON [{ "name", "link" }], already reduced to https links
-- and app schemes (orders/app-links.ts); the kiosk shows only the schemes the settings allow.
-- Display only: nothing of the money path reads it.
ALTER TABLE orders ADD COLUMN app_links TEXT;
