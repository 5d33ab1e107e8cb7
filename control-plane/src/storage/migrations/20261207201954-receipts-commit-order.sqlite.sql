-- Nothing on SQLite: one transaction writes at a time, so receipts become visible in `seq` order and the
-- audit export's cursor is `seq` alone (the PostgreSQL migration of the same id explains the difference).
SELECT 1;
