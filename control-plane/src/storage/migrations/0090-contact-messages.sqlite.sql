CREATE TABLE contacts (
  contact_id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  topic TEXT NOT NULL,
  message TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  mailed_at INTEGER
) STRICT;
CREATE INDEX contacts_by_time ON contacts (created_at);
