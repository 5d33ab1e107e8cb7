/**
 * Typed domain events. Handlers record what happened; the ledger turns events into receipts
 * and metrics count them, by subscribing here rather than being called from handlers.
 * Every kind is listed in docs/events.md. Fields are opaque ids only: never a secret, token,
 * code or raw email address.
 */
interface EventBase {
  /** Milliseconds since the epoch. */
  at: number;
  outcome: 'success' | 'failure';
}

export type DomainEvent =
  | (EventBase & { type: 'keys.rotated'; kid: string; retired: string | null })
  // passkey accounts, sessions and devices (issue 3); see docs/events.md
  | (EventBase & { type: 'account.created'; identityId: string; founder: boolean; credId: string })
  | (EventBase & { type: 'account.renamed'; identityId: string })
  // account lifecycle: an operator's pause, and deletion by the user or an operator (docs/accounts.md)
  | (EventBase & { type: 'account.disabled'; identityId: string; by: 'admin'; sessions: number; grants: number })
  | (EventBase & { type: 'account.enabled'; identityId: string; by: 'admin' })
  | (EventBase & { type: 'account.deleted'; identityId: string; by: 'self' | 'admin'; clients: number })
  | (EventBase & { type: 'session.started'; identityId: string; sessionId: string; deviceId: string; method: 'passkey' | 'recovery' | 'email'; assurance: 'recovery' | 'email' | 'passkey' })
  | (EventBase & { type: 'session.ended'; identityId: string; sessionId: string })
  | (EventBase & { type: 'session.revoked'; identityId: string; sessionId: string; by: string })
  | (EventBase & { type: 'device.revoked'; identityId: string; deviceId: string; sessions: number; by: string })
  | (EventBase & { type: 'step_up.completed'; identityId: string; sessionId: string; credId: string; totp: boolean })
  | (EventBase & { type: 'passkey.added'; identityId: string; credId: string })
  | (EventBase & { type: 'passkey.removed'; identityId: string; credId: string })
  // TOTP, recovery codes, email addresses and magic links (issue 3); emails appear only as their row id
  | (EventBase & { type: 'totp.enabled'; identityId: string; sessionId: string })
  | (EventBase & { type: 'totp.disabled'; identityId: string; sessionId: string })
  | (EventBase & { type: 'recovery.regenerated'; identityId: string; sessionId: string; count: number })
  | (EventBase & { type: 'recovery.used'; identityId: string; sessionId: string; remaining: number })
  | (EventBase & { type: 'lockout.started'; identityId: string; method: 'totp' | 'recovery'; until: number })
  | (EventBase & { type: 'email.added'; identityId: string; emailId: string })
  | (EventBase & { type: 'email.verified'; identityId: string; emailId: string })
  | (EventBase & { type: 'magic_link.sent'; identityId: string; emailId: string; deviceId: string })
  | (EventBase & { type: 'magic_link.redeemed'; identityId: string; emailId: string; deviceId: string; sessionId: string })
  | (EventBase & { type: 'magic_link.dry_run'; identityId: string; actorIdentityId: string; actorSessionId: string; emailId: string; founder: boolean })
  // OIDC client registration (issue 5); `by` says which credential acted, never its value
  | (EventBase & { type: 'client.registered'; clientId: string; ownerId: string | null; by: 'admin' | 'session'; revision: number })
  | (EventBase & { type: 'client.updated'; clientId: string; revision: number; secretIssued: boolean })
  | (EventBase & { type: 'client.deleted'; clientId: string })
  | (EventBase & { type: 'client.secret_rotated'; clientId: string; revision: number })
  // Edge-gate (issue 6): a new version of a gateway client's signed config
  | (EventBase & { type: 'gateway.config_issued'; clientId: string; version: number; configHash: string; policyHash: string; mode: 'observe' | 'canary' | 'enforce'; kid: string })
  // OIDC provider (issue 5); `grantId` names the family of everything issued from one code
  | (EventBase & { type: 'authorization.code_issued'; clientId: string; identityId: string; sessionId: string; approval: 'new' | 'remembered' | 'prompt_none' })
  | (EventBase & { type: 'token.issued'; clientId: string; identityId: string; grantId: string; dpop: boolean; refresh: boolean; resource: string | null })
  | (EventBase & { type: 'token.refreshed'; clientId: string; identityId: string; grantId: string; dpop: boolean })
  | (EventBase & { type: 'token.family_revoked'; clientId: string; identityId: string; grantId: string; cause: 'code_replay' | 'refresh_reuse' | 'revocation' })
  | (EventBase & { type: 'token.access_revoked'; clientId: string; grantId: string })
  | (EventBase & { type: 'session.logged_out'; identityId: string; sessionId: string; clientId: string | null });

export type DomainEventType = DomainEvent['type'];
