-- Signed operator commands (src/mqtt/command-record.ts owns this table). One row per request id a
-- verified command carried, written before the command runs: a replay of it (after a restart too)
-- is answered from this row and never runs again. Rows are kept: an envelope carries its expiry,
-- and a device whose clock was set back must still know the ids it has seen.
CREATE TABLE command_requests (
  request_id  TEXT PRIMARY KEY,
  command     TEXT NOT NULL,
  key_id      TEXT NOT NULL,
  digest      TEXT NOT NULL,              -- sha256 of the signed text
  issued_at   INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  order_id    INTEGER,                    -- the order the command concerned, if any
  outcome     TEXT,                       -- JSON of the result sent; NULL: it was running when the service stopped
  finished_at INTEGER
);
