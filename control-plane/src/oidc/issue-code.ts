import { mergeApproval, outlivesSession, type AuthorizationRequest } from '#lib/oauth/authorization-request.js';
import { formatScope } from '#lib/oauth/scope.js';
import { FAPI_MAX_CODE_SECONDS } from '#lib/oauth/fapi.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import type { StoredClient } from '../storage/interface.js';

export type IssueCodeServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'events' | 'now'>;

/** How the user's consent to this client was established: just given, remembered, or not needed. */
export type ApprovalKind = 'new' | 'remembered' | 'prompt_none' | 'first_party';

/** The configured code lifetime; for a FAPI 2.0 client never more than 60 s (FAPI 2.0 §5.3.2.1 item 13). */
function codeLifetimeSeconds(services: IssueCodeServices, client: StoredClient): number {
  const configured = services.config.lifetimes.authorizationCode;
  return client.metadata.fapi_profile ? Math.min(configured, FAPI_MAX_CODE_SECONDS) : configured;
}

/**
 * Issues an authorization code for a checked request (RFC 6749 §4.1.2) carrying the session's
 * assurance and methods, and, for a fresh approval, remembers exactly the scopes and resource
 * the page named. Only the code's SHA-256 is stored; the code is returned once.
 */
export async function issueAuthorizationCode(
  services: IssueCodeServices,
  session: SessionView,
  client: StoredClient,
  authz: AuthorizationRequest,
  approval: ApprovalKind,
): Promise<string> {
  const now = services.now();
  const code = randomToken(32);
  await services.storage.transaction(async (tx) => {
    await tx.oidc.insertCode({
      codeHash: sha256Hex(code),
      clientId: client.clientId,
      redirectUri: authz.redirectUri,
      identityId: session.identityId,
      sessionId: session.id,
      scope: formatScope(authz.scopes),
      resource: authz.resource ?? null,
      nonce: authz.nonce ?? null,
      codeChallenge: authz.codeChallenge,
      dpopJkt: authz.dpopJkt ?? null,
      assurance: session.assurance,
      amr: session.amr,
      authTime: session.authTime,
      createdAt: now,
      expiresAt: now + codeLifetimeSeconds(services, client) * 1000,
      consumedAt: null,
      grantId: null,
      offline: outlivesSession({
        scopes: authz.scopes,
        gatewayClient: client.metadata.gateway !== undefined,
        approval,
      }),
    });
    if (approval === 'new') {
      const before = await tx.oidc.approval(session.identityId, client.clientId);
      await tx.oidc.recordApproval(session.identityId, client.clientId, mergeApproval(before, authz), now);
    }
    await services.events.record(tx, {
      type: 'authorization.code_issued',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      identityId: session.identityId,
      sessionId: session.id,
      approval,
    });
    await services.events.record(tx, {
      type: 'signin.in_place',
      at: now,
      outcome: 'success',
      client_id: client.clientId,
      transport: authz.responseMode === 'web_message' ? 'popup' : 'redirect',
      identityId: session.identityId,
      assurance: session.assurance,
    });
  });
  return code;
}
