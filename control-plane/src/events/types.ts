import type { InPlaceTransport } from '#lib/oauth/in-place.js';
import type { AssuranceLevel } from '#lib/assurance/assurance.js';

/**
 * Every path by which a person's tokens reach a party, named in `signin.access_denied` receipts:
 * the in-place transports, SAML, the device grant's verification page, the token endpoint's
 * grants that mint again from an earlier approval (a code, a refresh token, an exchanged token),
 * and the v1 bridge.
 */
export type AccessPath = InPlaceTransport | 'saml' | 'device' | 'code' | 'refresh' | 'token_exchange' | 'v1';

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
  /** Who acted (docs/events.md); when left out, `actorOf` derives it. */
  actor?: Actor;
}

/**
 * Who acted: a person (identity id), the admin token (automation), an org's SCIM token (its
 * id), a connection (its id), or Keyplane itself. Opaque ids only.
 */
export interface Actor {
  type: 'person' | 'admin_token' | 'scim_token' | 'connection' | 'system';
  id?: string;
}

/** The admin token as the actor: automation, no person named. */
export const ADMIN_TOKEN: Actor = { type: 'admin_token' };

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
  // console roles and sessions (docs/console.md)
  | (EventBase & { type: 'operator.granted'; identityId: string; role: 'operator' | 'auditor' })
  | (EventBase & { type: 'operator.revoked'; identityId: string; role: 'operator' | 'auditor' })
  | (EventBase & { type: 'console.opened'; identityId: string; role: 'operator' | 'auditor' })
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
  // Gateway (docs/gateway.md#signed-config): a new version of a gateway client's signed config
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
      cause: 'code_replay' | 'refresh_reuse' | 'revocation' | 'session_ended' | 'client_revoked' | 'access_ended';
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
      transport: AccessPath;
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
  // teams (docs/orgs.md#teams): `actor` is the org admin who acted
  | (EventBase & { type: 'team.created' | 'team.renamed'; orgId: string; teamId: string })
  | (EventBase & { type: 'team.deleted'; orgId: string; teamId: string; members: number })
  | (EventBase & {
      type: 'team.member_added' | 'team.member_removed';
      orgId: string;
      teamId: string;
      identityId: string;
    })
  | (EventBase & { type: 'org.site_added'; orgId: string; siteId: string; primary: boolean; by: string })
  | (EventBase & { type: 'org.site_removed'; orgId: string; siteId: string; by: string })
  | (EventBase & { type: 'org.site_promoted'; orgId: string; siteId: string; by: string })
  | (EventBase & { type: 'org.site_verified'; orgId: string; siteId: string; method: 'dns' | 'well-known'; by: string })
  // proved mail domains (docs/orgs.md#mail-domains): opaque ids only, never the domain
  | (EventBase & {
      type: 'org.mail_domain_added' | 'org.mail_domain_verified' | 'org.mail_domain_removed' | 'org.mail_domain_lapsed';
      orgId: string;
      domainId: string;
    })
  // org passkey policy (docs/passkeys.md#org-policy)
  | (EventBase & {
      type: 'org.passkey_policy_set';
      orgId: string;
      attestation: 'none' | 'required';
      allowed: number;
      denied: number;
      refused: number;
      graceUntil: number;
    })
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
  // APIs and their scopes (docs/apis.md): `actor` is the admin token, or the org admin as a person
  | (EventBase & { type: 'api.declared' | 'api.updated' | 'api.removed'; apiId: string; orgId: string | null })
  // the client_credentials grant (docs/apis.md#client-credentials): a client acting for itself
  | (EventBase & { type: 'token.client_credentials'; clientId: string; resource: string | null; scopes: string[] })
  // the contact channel (docs/contact.md): the message and its sender stay in the contact store
  | (EventBase & { type: 'contact.received'; contactId: string; topic: string; mailed: boolean })
  // SCIM 2.0 per org (docs/scim.md): `actor` the SCIM token (or, for its tokens, the owner); a user
  // is named by its identity id and a keyed hash of its userName, never the name itself
  | (EventBase & { type: 'scim.token_created' | 'scim.token_revoked'; orgId: string; tokenId: string })
  | (EventBase & {
      type:
        | 'scim.user_created'
        | 'scim.user_updated'
        | 'scim.user_deleted'
        | 'scim.user_suspended'
        | 'scim.user_reactivated';
      orgId: string;
      identityId: string;
      userNameHash: string;
    })
  // the passkey enrolment link of a provisioned account (docs/scim.md#enrolment-links): mailed, then used
  | (EventBase & {
      type: 'scim.enrolment_sent';
      orgId: string;
      identityId: string;
      emailId: string;
      /** A new link an org admin (or a SCIM re-activation) sent; `replaced` unused links were deleted with it. */
      resent?: true;
      replaced?: number;
    })
  | (EventBase & { type: 'scim.enrolment_used'; orgId: string; identityId: string; credId: string; sessionId: string })
  | (EventBase & {
      type: 'scim.group_created' | 'scim.group_updated' | 'scim.group_deleted';
      orgId: string;
      teamId: string;
      added: number;
      removed: number;
    })
  // Outbound SCIM (docs/scim.md#outbound-scim): `actor` the owner or operator who set the server,
  // Keyplane itself (`system`) for what it pushed; opaque ids only
  | (EventBase & { type: 'scim.outbound.configured' | 'scim.outbound.removed'; clientId: string; orgId: string | null })
  | (EventBase & {
      type: 'scim.outbound.user_provisioned' | 'scim.outbound.user_deactivated';
      clientId: string;
      identityId: string;
      /** Provisioned: found at the remote end (by externalId or userName) rather than created. */
      matched?: boolean;
    })
  | (EventBase & {
      type: 'scim.outbound.group_provisioned' | 'scim.outbound.group_removed';
      clientId: string;
      teamId: string;
    })
  | (EventBase & {
      type: 'scim.outbound.abandoned';
      clientId: string;
      resource: 'user' | 'group' | 'reconcile';
      localId: string;
      attempts: number;
    })
  // Webhooks (docs/events.md#webhooks): `orgId` null for the operator's; `disabled` after 24 h of failed deliveries
  | (EventBase & {
      type: 'webhook.created' | 'webhook.updated' | 'webhook.deleted' | 'webhook.secret_rotated' | 'webhook.tested';
      webhookId: string;
      orgId: string | null;
    })
  | (EventBase & { type: 'webhook.disabled'; webhookId: string; orgId: string | null; failingSince: number })
  // Shared Signals streams (docs/events.md#shared-signals-streams-from-a-receivers-view): the receiver's client acted
  | (EventBase & {
      type:
        | 'ssf.stream_created'
        | 'ssf.stream_updated'
        | 'ssf.stream_deleted'
        | 'ssf.stream_status_changed'
        | 'ssf.verification_requested'
        | 'ssf.subjects_changed';
      streamId: string;
      clientId: string;
    })
  // Connections (docs/federation.md): `orgId` null for an instance-wide one; `subject` is a keyed
  // hash of the upstream subject, never the subject itself
  | (EventBase & {
      type: 'connection.created' | 'connection.updated' | 'connection.deleted';
      connectionId: string;
      orgId: string | null;
    })
  | (EventBase & {
      type: 'federation.sign_in';
      connectionId: string;
      subject: string;
      identityId: string;
      sessionId: string;
      assurance: 'email' | 'passkey';
    })
  | (EventBase & {
      type: 'federation.account_created' | 'federation.account_linked';
      connectionId: string;
      subject: string;
      identityId: string;
      orgId: string;
    })
  | (EventBase & {
      type: 'federation.refused';
      connectionId: string;
      subject: string | null;
      reason: string;
    })
  | (EventBase & { type: 'federation.tested'; connectionId: string; subject: string | null })
  | (EventBase & { type: 'federation.logged_out'; connectionId: string; identityId: string; sessionId: string })
  // Required SSO turned on (or its cap lowered) ended a session no upstream sign-in of the org started.
  | (EventBase & { type: 'federation.session_ended'; connectionId: string; identityId: string; sessionId: string })
  | (EventBase & { type: 'federation.linked'; connectionId: string; subject: string; identityId: string })
  | (EventBase & { type: 'federation.unlinked'; connectionId: string; identityId: string });

export type DomainEventType = DomainEvent['type'];
