/**
 * Who a federated identity is and how strong its sign-in was (docs/orgs.md#managed-accounts). Pure: the ID token's claims are verified already (openid-client).
 */

/** Microsoft Entra ID's issuers: `https://login.microsoftonline.com/{tenant}/v2.0`. */
const ENTRA_ISSUER = /^https:\/\/login\.microsoftonline\.com\/([^/]+)\/v2\.0\/?$/;
const ENTRA_SHARED_TENANTS = new Set(['common', 'organizations', 'consumers', '{tenantid}']);
const GOOGLE_ISSUERS = new Set(['https://accounts.google.com', 'accounts.google.com']);

/** A pin that narrows a multi-tenant issuer to one tenant. */
export interface TenantPin {
  /** Google Workspace: the `hd` claim (hosted domain) every ID token must carry. */
  hd?: string;
  /** Entra: the tenant id every ID token's `tid` must equal. */
  tid?: string;
}

/**
 * Whether an issuer (as its discovery document states it) lets accounts of many tenants sign in:
 * Google (any Google account unless `hd` is pinned) and Entra's shared endpoints (`common`,
 * `organizations`, `consumers`, and the `{tenantid}` template they publish).
 */
export function isMultiTenantIssuer(issuer: string): boolean {
  if (GOOGLE_ISSUERS.has(issuer.replace(/\/$/, ''))) return true;
  const entra = ENTRA_ISSUER.exec(issuer);
  return entra !== null && ENTRA_SHARED_TENANTS.has(entra[1]!.toLowerCase());
}

export type TenantCheck = { ok: true } | { ok: false; refusal: string };

/** An ID token's claims against the connection's pin: a pinned tenant must be the token's own. */
export function checkTenant(claims: Record<string, unknown>, pin: TenantPin | undefined): TenantCheck {
  if (pin?.hd !== undefined && claims.hd !== pin.hd)
    return { ok: false, refusal: 'the ID token is from another Google Workspace domain (hd)' };
  if (pin?.tid !== undefined && claims.tid !== pin.tid)
    return { ok: false, refusal: 'the ID token is from another Entra tenant (tid)' };
  return { ok: true };
}

/**
 * The upstream subject a federated identity is keyed by: the OIDC `sub`, except for Entra, whose
 * `sub` is pairwise per application and whose stable id is `tid` + `oid`. Never an e-mail address.
 * Null when the claims carry no usable subject.
 */
export function upstreamSubject(issuer: string, claims: Record<string, unknown>): string | null {
  if (ENTRA_ISSUER.test(issuer) && typeof claims.tid === 'string' && typeof claims.oid === 'string')
    return `${claims.tid}/${claims.oid}`;
  return typeof claims.sub === 'string' && claims.sub.length > 0 ? claims.sub : null;
}

/** Whether the upstream shows phishing-resistant authentication, by `amr` (RFC 8176, Entra) or `acr`. */
export function upstreamPhishingResistant(claims: Record<string, unknown>): boolean {
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((v): v is string => typeof v === 'string') : [];
  const key = amr.includes('hwk') || amr.includes('swk');
  const verified = amr.includes('user') || amr.includes('pin');
  if ((key && verified) || amr.includes('fido')) return true;
  return claims.acr === 'phr' || claims.acr === 'phrh';
}

/**
 * The assurance a federated sign-in reaches: `email`, or `passkey` only where the connection
 * allows it (`max_assurance: "passkey"`, an operator's choice) and the upstream shows
 * phishing-resistant authentication. Never `sensitive`: step-up uses the account's own passkey.
 */
export function federatedAssurance(
  claims: Record<string, unknown>,
  maxAssurance: 'email' | 'passkey' = 'email',
): 'email' | 'passkey' {
  return maxAssurance === 'passkey' && upstreamPhishingResistant(claims) ? 'passkey' : 'email';
}

/** The `amr` of a federated session: `fed` first, then the upstream's own methods kept as stated. */
export function federatedAmr(claims: Record<string, unknown>): string[] {
  const upstream = Array.isArray(claims.amr) ? claims.amr.filter((v): v is string => typeof v === 'string') : [];
  return ['fed', ...upstream.filter((v) => v !== 'fed')];
}

/** What a first sign-in may match a provisioned (SCIM) account by: never an e-mail claim. */
export interface DirectoryKeys {
  /** Compared with SCIM `externalId`: Entra's `oid`, otherwise the OIDC `sub`. */
  externalId: string | null;
  /** Compared with SCIM `userName`: the upstream UPN (`preferred_username`, else `upn`). */
  userName: string | null;
}

/**
 * The keys a first sign-in through an org connection matches a provisioned account by
 * (docs/scim.md#signing-in): `externalId` is the upstream's object id (Entra's `oid`, since its
 * `sub` is pairwise) or `sub`; `userName` is the UPN. Entra's `email` claim is never read: it is
 * an attribute any user of the tenant may set.
 */
export function directoryKeys(issuer: string, claims: Record<string, unknown>): DirectoryKeys {
  const text = (value: unknown) =>
    typeof value === 'string' && value.length > 0 && value.length <= 256 ? value : null;
  const externalId = ENTRA_ISSUER.test(issuer) ? text(claims.oid) : text(claims.sub);
  return { externalId, userName: text(claims.preferred_username) ?? text(claims.upn) };
}
