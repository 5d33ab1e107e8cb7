-- The ids each receipt names (lib/ledger/receipt-subjects.ts, docs/events.md#which-ids-a-receipt-names),
-- so that the audit export's `subject` filter reads an index instead of every receipt's body. A
-- trigger writes a receipt's rows as the receipt is inserted, in its transaction, whatever the
-- statement (a receipt also lands inside the one statement that spends a refresh token or a code:
-- postgres/sql.ts `spendWith`, where no other statement could read the new row's seq). Each row
-- keeps its receipt's transaction id too (migration 20261207201954-receipts-commit-order): pages
-- are ordered by (xid, seq), and the key (subject, xid, seq) gives one id's receipts in that order.
CREATE TABLE receipt_subjects (
  subject TEXT NOT NULL,
  xid xid8 NOT NULL,
  seq BIGINT NOT NULL,
  PRIMARY KEY (subject, xid, seq)
);
-- The rule of lib/ledger/receipt-subjects.ts in SQL, for one receipt's body (see the backfill below).
CREATE FUNCTION receipt_subjects_of(body TEXT) RETURNS SETOF TEXT LANGUAGE sql IMMUTABLE AS $fn$
  SELECT DISTINCT v #>> '{}'
  FROM (SELECT replace(body, '\u0000', '\u0001')::jsonb - 'kind' - 'at' - 'outcome' AS b) AS d
  CROSS JOIN LATERAL jsonb_path_query(
    CASE WHEN jsonb_typeof(d.b -> 'actor') = 'object' THEN d.b #- '{actor,type}' ELSE d.b END, 'strict $.**') AS v
  WHERE jsonb_typeof(v) = 'string' AND length(v #>> '{}') BETWEEN 1 AND 200 AND (v #>> '{}') !~ '[^A-Za-z0-9_.:@-]'
$fn$;
CREATE FUNCTION receipt_subjects_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO receipt_subjects (subject, xid, seq) SELECT s, NEW.xid, NEW.seq FROM receipt_subjects_of(NEW.body) AS s;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER receipts_subjects AFTER INSERT ON receipts FOR EACH ROW EXECUTE FUNCTION receipt_subjects_insert();
-- Receipts written before this migration, by the same rules: every string value at any depth
-- except `kind`, `at`, `outcome` and `actor.type`, and only what a subject can be (1 to 200 of
-- A-Z a-z 0-9 _ . : @ -). jsonb refuses the escape \u0000, which no id holds: it is read as
-- \u0001 (a string holding either is no id), so such a receipt's other ids are still found. The
-- length and a negated class, not `^[…]{1,200}$`: PostgreSQL's regex engine expands the bounded
-- repeat into 200 states, ten times slower here. JIT compiling this once-only statement costs
-- more than it saves.
SET LOCAL jit = off;
INSERT INTO receipt_subjects (subject, xid, seq)
SELECT s, r.xid, r.seq FROM receipts AS r CROSS JOIN LATERAL receipt_subjects_of(r.body) AS s;
