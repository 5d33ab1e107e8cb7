-- The audit export's cursor follows the order in which receipts became visible (docs/events.md#audit-export).
-- `seq` is taken when a receipt is inserted, so a transaction that took a lower `seq` may commit after a
-- higher one is read, and a cursor past that one would pass it over. Each receipt also keeps the id of the
-- transaction that wrote it: pages are ordered by (xid, seq) and hold only receipts whose transaction ended
-- before every transaction still running began (`pg_snapshot_xmin`), so nothing can appear before a cursor.
-- Receipts written before this migration all carry its transaction id, in `seq` order.
ALTER TABLE receipts ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX receipts_commit_order ON receipts (xid, seq);
