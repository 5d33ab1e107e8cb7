/**
 * Identity header hygiene at the trust boundary (docs/gateway.md#identity-to-the-upstream). A client must never be able to
 * smuggle an identity header past the gateway in any spelling: case, `_` and `.` variants are
 * all the same header to some backend (PHP and CGI fold `-`, `_` and `.`; GHSA-vjrc-mh2v-45x6,
 * the dotted Traefik alias). Names are compared after folding, and every `x-auth-*` goes.
 */

/** The identity headers the gateway sends upstream (docs/gateway.md#identity-to-the-upstream), in canonical spelling. */
export const IDENTITY_HEADERS = {
  subject: 'x-auth-subject',
  principalType: 'x-auth-principal-type',
  assurance: 'x-auth-assurance',
  email: 'x-auth-email',
  orgs: 'x-auth-orgs',
  groups: 'x-auth-groups',
  /** The connection id of a federated sign-in (`idp`); its name rides in the assertion. */
  idp: 'x-auth-idp',
  assertion: 'x-auth-assertion',
  /** RFC 8693: who acts for the subject now (the outermost `act.sub` of an exchanged token). */
  actor: 'x-auth-actor',
} as const;

const FOLDED = /^[a-z0-9-]*$/;

/** Folds a header name the way lenient backends do: lower case, `_` and `.` read as `-`. */
export function normalizeHeaderName(name: string): string {
  // Most names arrive already in this form (node lower-cases them): no new string for those.
  return FOLDED.test(name) ? name : name.toLowerCase().replace(/[_.]/g, '-');
}

/** True for any header that claims identity: `x-auth-*` in any spelling (`X_Auth_Subject`, `x.auth.email`). */
export function isIdentityHeaderName(name: string): boolean {
  return normalizeHeaderName(name).startsWith('x-auth-');
}

/**
 * Removes every identity header from `headers` (in place) and returns the names removed.
 * Works on node's lower-cased header object and on raw header name lists alike.
 */
export function stripIdentityHeaders(headers: Record<string, unknown>): string[] {
  const removed: string[] = [];
  for (const name of Object.keys(headers)) {
    if (isIdentityHeaderName(name)) {
      delete headers[name];
      removed.push(name);
    }
  }
  return removed;
}

export interface UpstreamIdentity {
  subject: string;
  principalType: 'human' | 'agent';
  assurance: string;
  /** Sent only when the address is verified: an unverified address proves nothing to the upstream. */
  email?: string;
  emailVerified?: boolean;
  /** The `orgs` claim (scope `orgs`), sent as `slug:role` comma-separated; absent when empty or not granted. */
  orgs?: ReadonlyArray<{ slug: string; role: string }>;
  /** The `groups` claim (scope `groups`), `<org>/<team>` comma-separated; absent when empty or not granted. */
  groups?: readonly string[];
  /** The connection id of a federated sign-in (`idp` claim). */
  idp?: string;
  assertion: string;
  /** Who acts for the subject (RFC 8693 `act`), newest first. */
  actors?: readonly string[];
}

/** The identity headers for the upstream, in canonical spelling; call after stripIdentityHeaders. */
export function buildIdentityHeaders(identity: UpstreamIdentity): Record<string, string> {
  const out: Record<string, string> = {
    [IDENTITY_HEADERS.subject]: identity.subject,
    [IDENTITY_HEADERS.principalType]: identity.principalType,
    [IDENTITY_HEADERS.assurance]: identity.assurance,
    [IDENTITY_HEADERS.assertion]: identity.assertion,
  };
  if (identity.email && identity.emailVerified === true) out[IDENTITY_HEADERS.email] = identity.email;
  // The one acting now; the whole chain is in the assertion's `act`, which the upstream can verify.
  if (identity.actors?.length) out[IDENTITY_HEADERS.actor] = identity.actors[0]!;
  if (identity.orgs && identity.orgs.length > 0)
    out[IDENTITY_HEADERS.orgs] = identity.orgs.map(({ slug, role }) => `${slug}:${role}`).join(',');
  if (identity.groups && identity.groups.length > 0) out[IDENTITY_HEADERS.groups] = identity.groups.join(',');
  if (identity.idp) out[IDENTITY_HEADERS.idp] = identity.idp;
  return out;
}
