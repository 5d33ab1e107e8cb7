import type { Receipt } from '../ledger/receipt.js';

/**
 * What an org owns that a receipt may name by id: its clients (OIDC clients, gateways and SAML
 * providers), connections, SCIM tokens, APIs, teams, sites, and the accounts it manages.
 */
export type OwnedKind = 'client' | 'connection' | 'scim_token' | 'api' | 'team' | 'site' | 'managed_account';

/**
 * The receipt members that name each kind. Clients: most receipts say `clientId`, in-place
 * sign-in and FedCM `client_id`, the consent gate `party` (a client or SAML provider id), the SAML
 * IdP `providerId`. Accounts: the account the receipt is about (`identityId`), or an agent's owner
 * (`ownerId`, which on a client is the org or the person that registered it). Never the acting
 * person, nor the other accounts a receipt mentions (a transfer's previous owner, a token
 * exchange's first client): those tell of someone's life elsewhere.
 */
const MEMBERS: Record<OwnedKind, readonly string[]> = {
  client: ['clientId', 'client_id', 'party', 'providerId'],
  connection: ['connectionId'],
  scim_token: ['tokenId'],
  api: ['apiId'],
  team: ['teamId'],
  site: ['siteId'],
  managed_account: ['identityId', 'ownerId'],
};

/** Connections and SCIM tokens that act name themselves as the receipt's `actor`. */
const ACTING: Partial<Record<string, OwnedKind>> = { connection: 'connection', scim_token: 'scim_token' };

/** The ids a receipt names, by kind, for the org look-ups: each id once. */
export function idsNamed(receipt: Receipt): Array<{ kind: OwnedKind; id: string }> {
  const named: Array<{ kind: OwnedKind; id: string }> = [];
  const add = (kind: OwnedKind, value: unknown) => {
    if (typeof value === 'string' && value !== '' && !named.some((n) => n.kind === kind && n.id === value))
      named.push({ kind, id: value });
  };
  for (const [kind, members] of Object.entries(MEMBERS) as Array<[OwnedKind, readonly string[]]>)
    for (const member of members) add(kind, receipt[member]);
  const actor = receipt['actor'] as { type?: unknown; id?: unknown } | undefined;
  const acting = typeof actor?.type === 'string' ? ACTING[actor.type] : undefined;
  if (acting) add(acting, actor!.id);
  return named;
}

/**
 * Whether a receipt concerns the org `orgId`, so that the org's webhooks may see it
 * (docs/events.md#org-webhooks). `ownerOf(kind, id)` answers the org that owns a named thing (or
 * manages a named account), undefined for anything no org owns.
 *
 * Seen: a receipt naming the org itself (`orgId`, or `ownerId` of what it registered), or naming
 * anything the org owns: its clients (so everyone's activity there, a personal member's
 * included), connections, SCIM tokens, APIs, teams, sites, and the accounts it manages (all their
 * life: they are the org's). A personal member appears only through those: their membership
 * changes name the org, their activity at its clients names the client. Their life elsewhere
 * (their passkeys and sessions, other orgs, other clients) names nothing of the org and is never
 * seen.
 */
export function receiptConcernsOrg(
  receipt: Receipt,
  orgId: string,
  ownerOf: (kind: OwnedKind, id: string) => string | undefined,
): boolean {
  if (receipt['orgId'] === orgId || receipt['ownerId'] === orgId) return true;
  return idsNamed(receipt).some(({ kind, id }) => ownerOf(kind, id) === orgId);
}
