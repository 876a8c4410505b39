-- Remote catalog, stock and jams (src/catalog/ owns these tables).

-- Every catalog document applied over MQTT or the CLI, newest last. The current catalog is the newest
-- row not rolled back; none → device.catalog from the settings (version "settings").
CREATE TABLE catalog_versions (
  seq            INTEGER PRIMARY KEY AUTOINCREMENT,
  version        TEXT NOT NULL,
  document       TEXT NOT NULL,                 -- JSON {version, items}, as validated
  source         TEXT NOT NULL,                 -- mqtt | cli
  applied_at     INTEGER NOT NULL,
  rolled_back_at INTEGER
);
CREATE INDEX catalog_versions_current ON catalog_versions (rolled_back_at, seq);

-- Per slot: counted stock (NULL = not counted: never refilled) and the jam counter.
CREATE TABLE slot_state (
  slot                 TEXT PRIMARY KEY,
  stock                INTEGER CHECK (stock IS NULL OR stock >= 0),
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  jammed_at            INTEGER,                 -- not NULL: out of sale until a technician clears it
  jam_reason           TEXT,
  updated_at           INTEGER NOT NULL
);
