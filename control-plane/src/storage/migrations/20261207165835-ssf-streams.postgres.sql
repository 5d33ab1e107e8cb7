-- Shared Signals streams (docs/events.md#shared-signals-streams-from-a-receivers-view): a
-- receiver client's streams; the push Authorization value is sealed under the master key.
CREATE TABLE ssf_streams (
  stream_id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  delivery TEXT NOT NULL CHECK (delivery IN ('push', 'poll')),
  endpoint_url TEXT,
  authorization_sealed BYTEA,
  events_requested TEXT NOT NULL,
  description TEXT,
  status TEXT NOT NULL CHECK (status IN ('enabled', 'paused', 'disabled')),
  status_reason TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX ssf_streams_by_client ON ssf_streams (client_id, created_at);
-- The subjects a receiver added that it may hear of (an account with a grant to it, or managed by its org).
CREATE TABLE ssf_subjects (
  stream_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  added_at BIGINT NOT NULL,
  PRIMARY KEY (stream_id, identity_id)
);
CREATE INDEX ssf_subjects_by_identity ON ssf_subjects (identity_id);
-- The outbox: one signed SET per (receipt, stream), written in the transaction that wrote the
-- receipt; push rows are leased by the delivery loop, poll rows wait for the receiver's ack.
CREATE TABLE ssf_events (
  event_id TEXT PRIMARY KEY,
  stream_id TEXT NOT NULL,
  delivery TEXT NOT NULL CHECK (delivery IN ('push', 'poll')),
  set_jwt TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  attempts BIGINT NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
  last_error TEXT,
  finished_at BIGINT,
  lease_holder TEXT,
  lease_until BIGINT
);
CREATE INDEX ssf_events_due ON ssf_events (next_attempt_at) WHERE state = 'pending' AND delivery = 'push';
CREATE INDEX ssf_events_by_stream ON ssf_events (stream_id, state, created_at);
CREATE INDEX ssf_events_finished ON ssf_events (finished_at) WHERE finished_at IS NOT NULL;
