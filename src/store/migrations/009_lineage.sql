-- The database's own account of its life, kept inside it so that it travels with every copy: each
-- start's verdict (continuing, restored, replaced, new: src/store/lineage-verdict.ts) and each
-- `vendgate db` action (backup, restore, replace). The marks themselves (database id, the
-- high-water marks of orders and events) are `meta` rows and `sqlite_sequence`; this is the history.
-- No AUTOINCREMENT: a row here must not move the high-water marks it reports.
CREATE TABLE lineage_log (
  id     INTEGER PRIMARY KEY,
  at     INTEGER NOT NULL,
  kind   TEXT NOT NULL,
  detail TEXT NOT NULL
);
