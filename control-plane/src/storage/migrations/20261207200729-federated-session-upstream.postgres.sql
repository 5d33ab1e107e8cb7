-- Upstream logout (docs/federation.md#signing-out): which upstream session a federated session came
-- from, as keyed hashes of the ID token's `sid` and `sub` (an upstream back-channel logout token
-- names one or the other), and that ID token sealed, for the upstream's id_token_hint.
ALTER TABLE federated_sessions ADD COLUMN upstream_sid_hash TEXT;
ALTER TABLE federated_sessions ADD COLUMN upstream_sub_hash TEXT;
ALTER TABLE federated_sessions ADD COLUMN id_token_sealed BYTEA;
CREATE INDEX federated_sessions_by_upstream_sid ON federated_sessions (connection_id, upstream_sid_hash);
CREATE INDEX federated_sessions_by_upstream_sub ON federated_sessions (connection_id, upstream_sub_hash);
