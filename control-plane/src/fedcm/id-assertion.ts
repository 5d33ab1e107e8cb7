import { countedEmails } from '../orgs/claimed-addresses.js';
import { buildAccount, type AssertionRequest, type FedcmAccount } from '#lib/fedcm/identity-provider.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { decideInPlaceConsent } from '#lib/oauth/in-place.js';
import { parseScope } from '#lib/oauth/scope.js';
import { buildIdTokenClaims } from '#lib/tokens/claims.js';
import { signIdToken } from '#lib/tokens/sign-token.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { requireSignInAllowed } from '../accounts/lifecycle.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import { userClaims } from '../oidc/tokens.js';
import { checkSignInAccess } from '../clients/sign-in-access.js';
import type { StoredClient } from '../storage/interface.js';
import { approvalOf } from '../consent/gate.js';

type Services = Pick<ControlPlaneServices, 'config' | 'storage' | 'state' | 'keys' | 'events' | 'now'>;

/** What FedCM shares: the identity plus the profile and email the client registered for (the browser's disclosure names them). */
const FEDCM_SCOPES = ['openid', 'email', 'profile'];

export function fedcmScopesOf(client: StoredClient): string[] {
  const registered = parseScope(client.metadata.scope);
  return FEDCM_SCOPES.filter((scope) => scope === 'openid' || registered.includes(scope));
}

/**
 * Claims the nonce for this client for as long as an ID token lives: a second assertion with
 * the same nonce is refused, so a captured request cannot mint another token.
 */
async function claimNonce(services: Services, clientId: string, nonce: string): Promise<void> {
  const key = `fedcm:nonce:${sha256Hex(`${clientId}\n${nonce}`)}`;
  if (!(await services.state.setIfAbsent(key, '1', services.config.lifetimes.idToken * 1000))) {
    throw fail('nonce_replayed', 'this nonce was used already; start the sign-in again');
  }
}

/**
 * The FedCM ID assertion (docs/in-place.md#fedcm): an ES256 ID token for exactly this client
 * (`aud`), bound to the RP's nonce, stating what the session proved. The caller has checked the
 * origin, the client's in-place switch and `Sec-Fetch-Dest`.
 */
export async function issueFedcmAssertion(
  services: Services,
  input: { session: SessionView; client: StoredClient; request: AssertionRequest },
): Promise<{ token: string; receipt: string | undefined }> {
  const { session, client, request } = input;
  if (request.accountId !== session.identityId)
    throw fail('account_mismatch', 'account_id is not the signed-in account');
  const scopes = fedcmScopesOf(client);
  // An operator's pause holds on every transport (docs/in-place.md#disabled-accounts): disabling
  // ends the sessions, and this covers one that lingers.
  await requireSignInAllowed(services.storage, session.identityId);
  // The client's access.orgs (docs/orgs.md#who-may-sign-in-to-an-app): the browser shows the error.
  const access = await checkSignInAccess(
    services,
    { id: client.clientId, orgs: client.metadata.access.orgs },
    session.identityId,
    'fedcm',
  );
  if (!access.allowed)
    throw fail('access_denied', 'this account is not a member of an organization this client admits');
  const before = await approvalOf(services, session.identityId, client.clientId);
  const consent = decideInPlaceConsent({
    transport: 'fedcm',
    request: { scopes },
    approval: before,
    firstParty: client.metadata.first_party === true,
    disclosureShown: request.disclosureShown,
  });
  if (!consent.allowed)
    throw fail('consent_required', 'the browser showed no disclosure and the account has not approved this client', {
      status: 403,
    });
  await claimNonce(services, client.clientId, request.nonce);
  const now = services.now();
  const claims = buildIdTokenClaims({
    issuer: services.config.issuer,
    subject: session.identityId,
    clientId: client.clientId,
    now,
    lifetimeSeconds: services.config.lifetimes.idToken,
    authTime: session.authTime,
    provedAssurance: session.assurance,
    amr: session.amr,
    principal: { type: 'human', id: session.identityId },
    scopes,
    nonce: request.nonce,
    sid: session.id,
    ...(await userClaims(services, session.identityId)),
  });
  const token = await signIdToken(claims, services.keys.current());
  const receipt = await services.storage.transaction(async (tx) => {
    // The client now holds an ID token naming this session: it is told when the session ends.
    await tx.logouts.recordParticipant(
      { sessionId: session.id, clientId: client.clientId, identityId: session.identityId },
      now,
    );
    if (consent.recordApproval)
      await tx.oidc.recordApproval(
        session.identityId,
        client.clientId,
        { scopes: [...new Set([...(before?.scopes ?? []), ...scopes])], resources: before?.resources ?? [] },
        now,
      );
    const recorded = await services.events.record(tx, {
      type: 'signin.in_place',
      at: now,
      outcome: 'success',
      client_id: client.clientId,
      transport: 'fedcm',
      identityId: session.identityId,
      assurance: session.assurance,
    });
    return recorded.receipt;
  });
  return { token, receipt };
}

/** FedCM disconnect: forgets the account's approval of the client, receipted. */
export async function disconnectFedcm(
  services: Services,
  input: { session: SessionView; client: StoredClient },
): Promise<{ accountId: string; receipt: string | undefined }> {
  const { session, client } = input;
  const now = services.now();
  const receipt = await services.storage.transaction(async (tx) => {
    await tx.oidc.removeApproval(session.identityId, client.clientId);
    const recorded = await services.events.record(tx, {
      type: 'fedcm.disconnected',
      at: now,
      outcome: 'success',
      client_id: client.clientId,
      identityId: session.identityId,
    });
    return recorded.receipt;
  });
  return { accountId: session.identityId, receipt };
}

/**
 * The signed-in account as the FedCM accounts list shows it: its first verified address and the
 * clients it approved before. A disabled account is offered to no relying party (its sessions
 * ended; this holds if one lingers); an unknown one reads as nobody signed in.
 */
export async function fedcmAccountOf(
  services: Pick<ControlPlaneServices, 'storage'>,
  identityId: string,
): Promise<FedcmAccount> {
  const { storage } = services;
  const identity = await storage.identities.get(identityId);
  if (!identity) throw fail('unauthorized', 'nobody is signed in');
  await requireSignInAllowed(storage, identity.identityId);
  const emails = await countedEmails(storage, identity, await storage.emails.listByIdentity(identity.identityId));
  const email = emails.find((e) => e.verifiedAt !== null)?.email;
  // The approvals table holds SAML service providers' too (consent/gate.ts): FedCM names clients only.
  const approvedClients = (await storage.oidc.approvedClients(identity.identityId)).filter(
    (id) => !id.startsWith('sp_'),
  );
  return buildAccount(identity, { ...(email !== undefined ? { email } : {}), approvedClients });
}
