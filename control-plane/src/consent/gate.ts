import { decideConsent, type Approval, type ConsentStanding, type Release } from '#lib/consent/decide-consent.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { isClientIdUrl } from '#lib/oauth/client-id-metadata.js';
import { mergeApproval } from '#lib/oauth/authorization-request.js';
import { randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient, StoredSamlProvider, Stores } from '../storage/interface.js';

/**
 * The one consent gate (docs/security.md "One consent gate"): every path that releases an
 * account's identity to another party (OIDC authorize, the direct grant, FedCM, SAML SSO, the
 * v1 bridge) asks here whether the account approved that party for that release, and records
 * the approval the one approval page collected. OIDC clients and SAML service providers share
 * one approvals table, keyed by the party's id (`cl…` or `sp_…`), so the account page lists and
 * revokes both alike.
 */
export type ConsentServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

/** A party an account's identity can be released to. */
export interface Party {
  kind: 'client' | 'saml';
  id: string;
  /** The name the approval page and the account page show. */
  name: string;
  /** Registered by the operator as first-party: no approval asked. */
  firstParty: boolean;
}

export function clientParty(client: StoredClient): Party {
  return {
    kind: 'client',
    id: client.clientId,
    name: client.metadata.client_name ?? client.clientId,
    firstParty: client.metadata.first_party === true,
  };
}

/**
 * A client known by its Client ID Metadata Document URL: never first-party, named on the account
 * page by the host that publishes it (the document itself is not fetched to list approvals).
 */
function documentParty(url: string): Party | null {
  try {
    return { kind: 'client', id: url, name: `${new URL(url).host} (unverified)`, firstParty: false };
  } catch {
    return null;
  }
}

/**
 * A service provider the installation owns (registered by the operator, no org) is first-party:
 * the operator vouched for it as it marks an OIDC client `first_party`. One an org owns, even one
 * the operator assigned to it, is edited by that org's admins and so needs each account's approval.
 */
export function samlParty(provider: StoredSamlProvider): Party {
  return {
    kind: 'saml',
    id: provider.id,
    name: provider.name ?? provider.entityId,
    firstParty: provider.orgId === null,
  };
}

/** What the account approved for the party before (scopes or attribute sources, and resources), or null. */
export async function approvalOf(
  services: Pick<ControlPlaneServices, 'storage'>,
  identityId: string,
  partyId: string,
): Promise<Approval | null> {
  return services.storage.oidc.approval(identityId, partyId);
}

/** The gate's question: may this release go to this party for this account now? */
export async function askConsent(
  services: Pick<ControlPlaneServices, 'storage'>,
  identityId: string,
  party: Party,
  release: Release,
): Promise<ConsentStanding> {
  const approval = party.firstParty ? null : await approvalOf(services, identityId, party.id);
  return decideConsent({ firstParty: party.firstParty, approval, release });
}

/** Remembers what the approval page named, added to what the account approved before. */
export async function recordConsent(
  services: Pick<ConsentServices, 'events'>,
  tx: Stores,
  input: { identityId: string; party: Party; release: Release; at: number },
): Promise<void> {
  const before = await tx.oidc.approval(input.identityId, input.party.id);
  const release = {
    scopes: [...input.release.scopes],
    ...(input.release.resource !== undefined ? { resource: input.release.resource } : {}),
  };
  await tx.oidc.recordApproval(input.identityId, input.party.id, mergeApproval(before, release), input.at);
  await services.events.record(tx, {
    type: 'consent.approved',
    at: input.at,
    outcome: 'success',
    party: input.party.id,
    partyKind: input.party.kind,
    identityId: input.identityId,
  });
}

/** An approval as the account page lists it. */
export interface ListedApproval {
  party: string;
  kind: 'client' | 'saml';
  name: string;
  scopes: string[];
}

/** Every party the account approved, OIDC clients and SAML service providers alike (a removed one is skipped). */
export async function listApprovals(
  services: Pick<ControlPlaneServices, 'storage'>,
  identityId: string,
): Promise<ListedApproval[]> {
  const ids = await services.storage.oidc.approvedClients(identityId);
  const listed = await Promise.all(
    ids.map(async (id): Promise<ListedApproval | null> => {
      const approval = await approvalOf(services, identityId, id);
      if (!approval) return null;
      const party = id.startsWith('sp_')
        ? await services.storage.saml.provider(id).then((p) => (p ? samlParty(p) : null))
        : isClientIdUrl(id)
          ? documentParty(id)
          : await services.storage.clients.get(id).then((c) => (c ? clientParty(c) : null));
      return party ? { party: id, kind: party.kind, name: party.name, scopes: [...approval.scopes] } : null;
    }),
  );
  return listed.filter((entry): entry is ListedApproval => entry !== null);
}

/** Forgets the account's approval of the party: its next sign-in there asks again. */
export async function revokeApproval(
  services: ConsentServices,
  identityId: string,
  partyId: string,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.oidc.removeApproval(identityId, partyId))) throw fail('not_found', 'no such approval');
    return services.events.record(tx, {
      type: 'consent.revoked',
      at: now,
      outcome: 'success',
      party: partyId,
      identityId,
    });
  });
}

/** An approval page's token lives this long (ms). */
const APPROVAL_TTL_MS = 10 * 60_000;

/**
 * Parks what an approval page is about (the session and the request it would answer) under a
 * fresh token for its form; `kind` keeps each protocol's tokens apart.
 */
export async function offerApproval(
  services: Pick<ControlPlaneServices, 'state'>,
  kind: 'saml' | 'v1',
  bound: { sessionId: string } & Record<string, string>,
): Promise<string> {
  const token = randomToken(24);
  await services.state.set(`consent:${kind}:${token}`, JSON.stringify(bound), APPROVAL_TTL_MS);
  return token;
}

/**
 * The approval page came back: its token is taken (one use) and must have been offered to this
 * session; answers what it was bound to, or null (expired, used, another session's).
 */
export async function takeApproval(
  services: Pick<ControlPlaneServices, 'state'>,
  kind: 'saml' | 'v1',
  token: unknown,
  sessionId: string | undefined,
): Promise<Record<string, string> | null> {
  if (typeof token !== 'string' || !/^[A-Za-z0-9_-]{32}$/.test(token) || sessionId === undefined) return null;
  const stored = await services.state.take(`consent:${kind}:${token}`);
  const bound = stored ? (JSON.parse(stored) as Record<string, string>) : null;
  return bound && bound.sessionId === sessionId ? bound : null;
}
