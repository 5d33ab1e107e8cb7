-- OpenID Connect Back-Channel Logout 1.0. Clients that got an ID token in a session outside a
-- grant (FedCM); grants already name their session.
CREATE TABLE session_participants (
  session_id TEXT NOT NULL,
  client_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, client_id)
) STRICT;
CREATE INDEX session_participants_by_time ON session_participants (created_at);
-- The outbox: one logout token per (session, client), written in the transaction that ended
-- the session, delivered by whichever replica leases it (lease_holder, lease_until).
CREATE TABLE backchannel_logouts (
  logout_id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  jti TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'abandoned')),
  last_error TEXT,
  finished_at INTEGER,
  lease_holder TEXT,
  lease_until INTEGER,
  UNIQUE (session_id, client_id)
) STRICT;
CREATE INDEX backchannel_logouts_due ON backchannel_logouts (next_attempt_at) WHERE state = 'pending';
CREATE INDEX backchannel_logouts_finished ON backchannel_logouts (finished_at) WHERE finished_at IS NOT NULL;
