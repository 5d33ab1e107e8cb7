import type { KeyObject, webcrypto } from 'node:crypto';
import { signJwt } from '../crypto/jwt.js';
import type { AccessDirectory } from '../access/directory.js';
import { canonicalJson } from '../ledger/canonical-json.js';
import { sha256Hex } from '../crypto/sha256.js';
import type { GatewayPolicy } from './policy.js';
import { GATEWAY_CONFIG_TYP } from './signed-config.js';

/**
 * The control plane's side of the signed gateway config. The gateway refuses
 * an older version (rollback) and the same version with other bytes (equivocation), so a
 * version, once issued, is kept and served unchanged until something makes a new one necessary.
 */

/** How long an issued config is valid (seconds); it is re-signed once half of that has passed. */
export const GATEWAY_CONFIG_LIFETIME_SECONDS = 86_400;

/** At most this many revoked sessions in one config (newest first); older ones end at their next refresh. */
export const REVOKED_SESSIONS_LIMIT = 1_000;

/** What decides whether the newest issued config can be served again. */
export interface IssuedConfigFacts {
  policyHash: string;
  kid: string;
  /** Milliseconds. */
  issuedAt: number;
  /** Milliseconds. */
  expiresAt: number;
}

/** SHA-256 hex of the RFC 8785 canonical JSON of a policy: equal policies hash equally whatever their member order. */
export function hashGatewayPolicy(policy: GatewayPolicy): string {
  return sha256Hex(canonicalJson(policy));
}

/**
 * What a config states besides the registered policy: the deny list of revoked control-plane
 * sessions and the access directory. Its hash decides reuse, so a change to any of them (a
 * member removed, an account disabled) mints a new version.
 */
export function hashIssuedContent(
  policy: GatewayPolicy,
  revokedSessions: readonly string[],
  directory?: AccessDirectory,
): string {
  if (revokedSessions.length === 0 && directory === undefined) return hashGatewayPolicy(policy);
  return sha256Hex(
    canonicalJson({
      policy,
      revoked_sessions: [...revokedSessions].sort(),
      ...(directory !== undefined ? { access_directory: directory } : {}),
    }),
  );
}

/** The public URLs of a gateway client: its redirect URIs `<public-url>/_gate/callback` (docs/gateway.md#browser-sessions). */
export function gatewayPublicUrls(redirectUris: readonly string[]): string[] {
  const suffix = '/_gate/callback';
  return redirectUris.filter((uri) => uri.endsWith(suffix)).map((uri) => uri.slice(0, -suffix.length));
}

const withoutTrailingSlash = (uri: string) => (uri.endsWith('/') ? uri.slice(0, -1) : uri);

/**
 * The policy as issued: each route whose public URL `<public-url><path>` is one of the client's
 * registered `resources` carries it as `resource`, the audience its access tokens must name
 * (RFC 8707); a trailing slash on either side is ignored. Routes without one keep the
 * gateway's public URL as their audience.
 */
export function deriveIssuedPolicy(
  policy: GatewayPolicy,
  client: { redirectUris: readonly string[]; resources: readonly string[] },
): GatewayPolicy {
  const bases = gatewayPublicUrls(client.redirectUris);
  const registered = new Map(client.resources.map((resource) => [withoutTrailingSlash(resource), resource]));
  return {
    ...policy,
    routes: policy.routes.map(({ resource: _ignored, ...route }) => {
      for (const base of bases) {
        const resource = registered.get(withoutTrailingSlash(`${base}${route.path}`));
        if (resource !== undefined) return { ...route, resource };
      }
      return route;
    }),
  };
}

/**
 * The newest issued config is served again only while it states the same policy, was signed
 * by the key that signs now (so a rotation moves gateways onto the new key), and is less than
 * half its lifetime old (so a polling gateway never holds one close to expiry).
 */
export function canReuseIssuedConfig(
  latest: IssuedConfigFacts | null,
  wanted: { policyHash: string; kid: string; now: number },
): boolean {
  if (!latest) return false;
  const halfLife = latest.issuedAt + (latest.expiresAt - latest.issuedAt) / 2;
  return latest.policyHash === wanted.policyHash && latest.kid === wanted.kid && wanted.now < halfLife;
}

export interface SignGatewayConfigInput {
  issuer: string;
  clientId: string;
  version: number;
  policy: GatewayPolicy;
  /** Control-plane session ids (`sid` of ID tokens) the gateway must refuse at once. */
  revokedSessions?: readonly string[];
  /** The accounts the routes' `allow` rules can name (docs/gateway.md#access-rules). */
  directory?: AccessDirectory;
  /** Milliseconds. */
  now: number;
  lifetimeSeconds: number;
}

/** Signs one config: ES256, `typ: keyplane-gateway-config+jwt`, `kid`; `aud` = the gateway's client id. */
export async function signGatewayConfig(
  input: SignGatewayConfigInput,
  key: { kid: string; privateKey: KeyObject | webcrypto.CryptoKey },
): Promise<{ jws: string; hash: string; issuedAt: number; expiresAt: number }> {
  if (!Number.isSafeInteger(input.version) || input.version < 1)
    throw new RangeError('version must be a positive integer');
  const iat = Math.floor(input.now / 1000);
  const exp = iat + input.lifetimeSeconds;
  const revoked =
    input.revokedSessions && input.revokedSessions.length > 0
      ? { revoked_sessions: [...input.revokedSessions].sort() }
      : {};
  const directory = input.directory !== undefined ? { access_directory: input.directory } : {};
  const jws = signJwt(
    { typ: GATEWAY_CONFIG_TYP, kid: key.kid },
    {
      version: input.version,
      gateway: input.policy,
      ...revoked,
      ...directory,
      iss: input.issuer,
      aud: input.clientId,
      iat,
      exp,
    },
    key.privateKey,
    'ES256',
  );
  return { jws, hash: sha256Hex(jws), issuedAt: iat * 1000, expiresAt: exp * 1000 };
}
