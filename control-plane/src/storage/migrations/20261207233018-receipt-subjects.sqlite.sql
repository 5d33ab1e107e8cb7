-- The ids each receipt names (lib/ledger/receipt-subjects.ts, docs/events.md#which-ids-a-receipt-names),
-- so that the audit export's `subject` filter reads an index instead of every receipt's body. The
-- store writes a receipt's rows in the statement after the receipt's own, in its transaction.
-- Keyed by (subject, seq): one id's receipts lie together, in ledger order, for the cursor.
CREATE TABLE receipt_subjects (
  subject TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (subject, seq)
) STRICT, WITHOUT ROWID;
-- Receipts written before this migration, by the same rules in SQL: every string value at any
-- depth except `kind`, `at`, `outcome` and `actor.type`, and only what a subject can be (1 to 200
-- of A-Z a-z 0-9 _ . : @ -). SQLite's length() and GLOB stop at a NUL character; its length in
-- bytes does not, and equals its length in characters only for ASCII without NUL. One set-based
-- statement: SQLite parses each body in C, once per function.
INSERT OR IGNORE INTO receipt_subjects (subject, seq)
SELECT t.value, r.seq
FROM receipts AS r, json_tree(json_remove(r.body, '$.kind', '$.at', '$.outcome', '$.actor.type')) AS t
WHERE t.type = 'text' AND length(t.value) BETWEEN 1 AND 200 AND length(CAST(t.value AS BLOB)) = length(t.value)
  AND t.value NOT GLOB '*[^A-Za-z0-9_.:@-]*';
