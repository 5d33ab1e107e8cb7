import type { InPlaceTransport } from '#lib/oauth/in-place.js';
import type { AssuranceLevel } from '#lib/assurance/assurance.js';

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

/** What a sign-in says about the session it opened or renewed. */
interface SignInFields {
  identityId: string;
  sessionId: string;
  deviceId: string;
  method: 'passkey' | 'recovery' | 'email';
  assurance: 'recovery' | 'email' | 'passkey';
}

export type DomainEvent =
  | (EventBase & { type: 'keys.rotated'; kid: string; retired: string | null })
  // passkey accounts, sessions and devices; see docs/events.md
  | (EventBase & { type: 'account.created'; identityId: string; founder: boolean; credId: string })
  | (EventBase & { type: 'account.renamed'; identityId: string })
  // account lifecycle: an operator's pause, and deletion by the user or an operator (docs/accounts.md)
  | (EventBase & { type: 'account.disabled'; identityId: string; by: 'admin'; sessions: number; grants: number })
  | (EventBase & { type: 'account.enabled'; identityId: string; by: 'admin' })
  | (EventBase & { type: 'account.deleted'; identityId: string; by: 'self' | 'admin'; clients: number })
  | (EventBase & SignInFields & { type: 'session.started' })
  // A sign-in on a browser that had a session of the same account: the session went on under a
  // new token (docs/security.md#session-tokens). Not an end: the sid, grants and history stay.
  | (EventBase & SignInFields & { type: 'session.renewed' })
  | (EventBase & { type: 'session.ended'; identityId: string; sessionId: string })
  | (EventBase & { type: 'session.revoked'; identityId: string; sessionId: string; by: string })
  | (EventBase & { type: 'device.revoked'; identityId: string; deviceId: string; sessions: number; by: string })
  | (EventBase & { type: 'step_up.completed'; identityId: string; sessionId: string; credId: string; totp: boolean })
  | (EventBase & { type: 'passkey.added'; identityId: string; credId: string })
  | (EventBase & { type: 'passkey.removed'; identityId: string; credId: string })
  // TOTP, recovery codes, email addresses and magic links; emails appear only as their row id
  | (EventBase & { type: 'totp.enabled'; identityId: string; sessionId: string })
  | (EventBase & { type: 'totp.disabled'; identityId: string; sessionId: string })
  | (EventBase & { type: 'recovery.regenerated'; identityId: string; sessionId: string; count: number })
  | (EventBase & { type: 'recovery.used'; identityId: string; sessionId: string; remaining: number })
  | (EventBase & { type: 'lockout.started'; identityId: string; method: 'totp' | 'recovery'; until: number })
  | (EventBase & { type: 'email.added'; identityId: string; emailId: string })
  | (EventBase & { type: 'email.verified'; identityId: string; emailId: string })
  | (EventBase & { type: 'magic_link.sent'; identityId: string; emailId: string; deviceId: string })
  | (EventBase & {
      type: 'magic_link.redeemed';
      identityId: string;
      emailId: string;
      deviceId: string;
      sessionId: string;
    })
  | (EventBase & {
      type: 'magic_link.dry_run';
      identityId: string;
      actorIdentityId: string;
      actorSessionId: string;
      emailId: string;
      founder: boolean;
    })
  // OIDC client registration (docs/oidc.md, "Register a client"); `by` says which credential acted, never its value
  | (EventBase & {
      type: 'client.registered';
      clientId: string;
      ownerId: string | null;
      by: 'admin' | 'session';
      revision: number;
      connector?: string;
    })
  | (EventBase & { type: 'client.updated'; clientId: string; revision: number; secretIssued: boolean })
  | (EventBase & { type: 'client.deleted'; clientId: string })
  | (EventBase & { type: 'client.secret_rotated'; clientId: string; revision: number })
  // Edge-gate (docs/gateway.md#signed-config): a new version of a gateway client's signed config
  | (EventBase & {
      type: 'gateway.config_issued';
      clientId: string;
      version: number;
      configHash: string;
      policyHash: string;
      mode: 'observe' | 'canary' | 'enforce';
      kid: string;
    })
  // MCP tool calls a gateway refused by its rules per tool since the instance's previous evidence
  // report (docs/gateway.md#evidence): one per report, `tools` as "<tool> <reason> <n>" lines
  | (EventBase & { type: 'gateway.refusals'; clientId: string; instance: string; total: number; tools: string[] })
  // Rollout (docs/rollout.md): signed profiles and plans, the project's client, verification, policy changes, attestation
  | (EventBase & {
      type: 'rollout.document_signed';
      project: string;
      kind: 'profile' | 'plan';
      version: number;
      documentHash: string;
    })
  | (EventBase & { type: 'rollout.registered'; project: string; clientId: string; profileVersion: number })
  | (EventBase & {
      type: 'rollout.verified';
      project: string;
      clientId: string;
      profileVersion: number;
      passed: boolean;
      failed: string[];
    })
  | (EventBase & {
      type: 'rollout.policy_changed';
      project: string;
      clientId: string;
      mode: 'observe' | 'canary' | 'enforce';
      canaryPercent: number | null;
      revision: number;
    })
  | (EventBase & {
      type: 'rollout.attested';
      project: string;
      clientId: string;
      profileVersion: number;
      configVersion: number;
      attestationHash: string;
    })
  // OIDC provider (docs/oidc.md); `grantId` names the family of everything issued from one code
  | (EventBase & {
      type: 'authorization.code_issued';
      clientId: string;
      identityId: string;
      sessionId: string;
      approval: 'new' | 'remembered' | 'prompt_none' | 'first_party';
    })
  | (EventBase & {
      type: 'token.issued';
      clientId: string;
      identityId: string;
      grantId: string;
      dpop: boolean;
      refresh: boolean;
      resource: string | null;
    })
  // RFC 8628: the person's decision on a device code at /device (docs/oidc.md#75-the-device-authorization-grant-post-authdevice-rfc-8628)
  | (EventBase & {
      type: 'device.decided';
      clientId: string;
      identityId: string;
      sessionId: string;
      decision: 'approved' | 'denied';
    })
  // RFC 8693: a client exchanged a person's access token for one at its resource, acting for them
  | (EventBase & {
      type: 'token.exchanged';
      clientId: string;
      subjectClientId: string;
      /** The person, or for an agent's own token the agent's owner. */
      identityId: string;
      /** The agent that acts (its own token exchanged, or named by an actor_token). */
      agentId?: string;
      grantId: string;
      fromGrantId: string;
      resource: string;
      actors: string[];
    })
  | (EventBase & { type: 'token.refreshed'; clientId: string; identityId: string; grantId: string; dpop: boolean })
  | (EventBase & {
      type: 'token.family_revoked';
      clientId: string;
      identityId: string;
      grantId: string;
      cause: 'code_replay' | 'refresh_reuse' | 'revocation' | 'session_ended' | 'client_revoked';
    })
  | (EventBase & { type: 'token.access_revoked'; clientId: string; grantId: string })
  | (EventBase & { type: 'session.logged_out'; identityId: string; sessionId: string; clientId: string | null })
  // OpenID Connect Back-Channel Logout 1.0 (docs/oidc.md#101-back-channel-logout): a logout token queued
  // for a client when a session it got tokens in ended, and how its delivery ended
  | (EventBase & {
      type: 'logout.backchannel_queued';
      logoutId: string;
      clientId: string;
      identityId: string;
      sessionId: string;
    })
  | (EventBase & {
      type: 'logout.backchannel_delivered';
      logoutId: string;
      clientId: string;
      identityId: string;
      sessionId: string;
      attempts: number;
      status: number;
    })
  | (EventBase & {
      type: 'logout.backchannel_abandoned';
      logoutId: string;
      clientId: string;
      identityId: string;
      sessionId: string;
      attempts: number;
      error: string;
    })
  // agent identity (docs/agents.md); keys appear only as RFC 7638 thumbprints, codes never
  | (EventBase & { type: 'agent.enrollment_begun'; enrollmentId: string; subjectKind: string; jkt: string })
  | (EventBase & { type: 'agent.enrollment_approved'; enrollmentId: string; ownerId: string; sessionId: string })
  | (EventBase & { type: 'agent.enrolled'; agentId: string; enrollmentId: string; ownerId: string; jkt: string })
  | (EventBase & {
      type: 'agent.state_changed';
      agentId: string;
      ownerId: string;
      action: string;
      from: string;
      to: string;
      grantsRevoked: number;
    })
  | (EventBase & {
      type: 'agent.key_rotated';
      agentId: string;
      ownerId: string;
      jkt: string;
      previousJkt: string;
      from: string;
      to: string;
    })
  | (EventBase & { type: 'agent.transfer_begun'; agentId: string; ownerId: string; toIdentityId: string; from: string })
  | (EventBase & {
      type: 'agent.transfer_accepted';
      agentId: string;
      ownerId: string;
      previousOwnerId: string;
      jkt: string;
      grantsRevoked: number;
    })
  | (EventBase & { type: 'agent.visibility_changed'; agentId: string; ownerId: string; visibility: string })
  | (EventBase & {
      type: 'agent.evidence_added';
      agentId: string;
      ownerId: string;
      evidence: 'domain-control' | 'descriptor-integrity';
      subject: string;
    })
  | (EventBase & {
      type: 'agent.grant_approved';
      agentId: string;
      ownerId: string;
      grantId: string;
      clientId: string;
      resource: string | null;
      scope: string;
      /** The owner on their page or API, or the operator with the admin token (`keyplane agent grant`). */
      approvedBy: 'owner' | 'operator';
    })
  | (EventBase & { type: 'agent.grant_revoked'; agentId: string; ownerId: string; grantId: string })
  | (EventBase & {
      type: 'agent.token_issued';
      agentId: string;
      ownerId: string;
      grantId: string;
      clientId: string;
      jkt: string;
    })
  // the deprecated v1 bridge (docs/v1-bridge.md)
  | (EventBase & { type: 'v1.session_issued'; clientId: string; identityId: string })
  // In-place sign-in (docs/in-place.md): one receipt type for every transport; the field names are those of docs/in-place.md
  | (EventBase & {
      type: 'signin.in_place';
      client_id: string;
      transport: InPlaceTransport;
      identityId: string;
      assurance: AssuranceLevel;
    })
  | (EventBase & { type: 'fedcm.disconnected'; client_id: string; identityId: string })
  // A relying party's access rules (`access.orgs`) refused the account (docs/orgs.md#who-may-sign-in-to-an-app)
  | (EventBase & {
      type: 'signin.access_denied';
      client_id: string;
      transport: InPlaceTransport | 'saml';
      identityId: string;
      refusal: 'account_disabled' | 'owner_disabled' | 'no_rule_matched';
    })
  // the one consent gate (docs/security.md "One consent gate"): `party` is a client id or a SAML provider id
  | (EventBase & { type: 'consent.approved'; party: string; partyKind: 'client' | 'saml'; identityId: string })
  | (EventBase & { type: 'consent.revoked'; party: string; identityId: string })
  // organizations, sites and the posture scan (docs/orgs.md, docs/scan.md); `by` is the acting identity
  | (EventBase & { type: 'org.created'; orgId: string; by: string })
  | (EventBase & {
      type: 'org.member_invited';
      orgId: string;
      identityId: string;
      role: 'member' | 'admin' | 'owner';
      by: string;
    })
  | (EventBase & { type: 'org.member_joined'; orgId: string; identityId: string; role: 'member' | 'admin' | 'owner' })
  | (EventBase & {
      type: 'org.member_role_changed';
      orgId: string;
      identityId: string;
      from: 'member' | 'admin' | 'owner';
      role: 'member' | 'admin' | 'owner';
      by: string;
    })
  | (EventBase & { type: 'org.member_removed'; orgId: string; identityId: string; by: string })
  | (EventBase & { type: 'org.site_added'; orgId: string; siteId: string; primary: boolean; by: string })
  | (EventBase & { type: 'org.site_removed'; orgId: string; siteId: string; by: string })
  | (EventBase & { type: 'org.site_promoted'; orgId: string; siteId: string; by: string })
  | (EventBase & { type: 'org.site_verified'; orgId: string; siteId: string; method: 'dns' | 'well-known'; by: string })
  | (EventBase & {
      type: 'scan.completed';
      scanId: string;
      siteId: string | null;
      grade: string;
      score: number;
      algorithm: string;
      trigger: 'org' | 'public' | 'schedule';
    })
  // SAML identity provider (docs/saml.md)
  | (EventBase & {
      type: 'saml.provider_registered';
      providerId: string;
      entityId: string;
      orgId: string | null;
      by: 'admin' | 'session';
    })
  | (EventBase & { type: 'saml.provider_updated'; providerId: string; revision: number; by: 'admin' | 'session' })
  | (EventBase & { type: 'saml.provider_deleted'; providerId: string; by: 'admin' | 'session' })
  | (EventBase & {
      type: 'saml.assertion_issued';
      providerId: string;
      identityId: string;
      sessionId: string;
      assurance: AssuranceLevel;
      nameIdFormat: string;
      initiated: 'sp' | 'idp';
    })
  | (EventBase & { type: 'saml.logout'; providerId: string; identityId: string | null; sessionId: string | null })
  // the read-only MCP server (docs/mcp.md): a refused call; `method` and `tool` as sent, when short and plain
  | (EventBase & {
      type: 'mcp.attempt';
      method: string;
      tool: string | null;
      reason: 'mcp_read_only' | 'mcp_unknown_tool';
    })
  // the contact channel (docs/contact.md): the message and its sender stay in the contact store
  | (EventBase & { type: 'contact.received'; contactId: string; topic: string; mailed: boolean });

export type DomainEventType = DomainEvent['type'];
