/** Release history, newest first. The JSON form is versioned by `format`. */
export interface ChangelogEntry {
  version: string;
  date: string;
  api: string;
  changes: Array<{ area: string; text: string }>;
}

export const CHANGELOG_FORMAT = 'keyplane-changelog/v1';

export const changelog: ChangelogEntry[] = [
  {
    version: '0.1.0',
    date: '2026-11-22',
    api: 'svc-api-1',
    changes: [
      { area: 'foundation', text: 'Control plane skeleton: configuration, SQLite storage with migrations and online backup, shared state (in-process or Redis), rate limiting and lockout.' },
      { area: 'keys', text: 'ES256 key ring with a published next key, retired keys kept for verification, private keys encrypted at rest; `keyplane keys rotate`.' },
      { area: 'discovery', text: 'OpenID configuration, JWKS, protected-resource metadata, FedCM and WebAuthn well-known files, OpenAPI 3.1 description, agent introspection documents.' },
      { area: 'accounts', text: 'Passkey sign-up and sign-in (usernameless too), founder bootstrap link, sessions and devices, step-up to `sensitive`, passkey management, TOTP, recovery codes, verified email and magic links, account pages and export.' },
      { area: 'receipts', text: 'Tamper-evident receipt ledger: every sign-in, token issue and account change leaves a receipt; sorted-Merkle inclusion and absence proofs; signed, chained checkpoints; `keyplane receipt verify` and `keyplane ledger audit`.' },
      { area: 'oidc', text: 'OpenID Connect provider: client registration (RFC 7591/7592) and the self-serve `/apps` page with owner edits, secret rotation and revocation, authorize with PKCE S256, one-tap and web_message popup, token with refresh rotation and DPoP, resource indicators, userinfo, revocation, introspection, RP-initiated logout.' },
      { area: 'gateway', text: 'Edge-gate: streaming reverse proxy to one or more upstreams by path, identity-header hygiene, signed assertions, OIDC code flow sign-in with encrypted cookie sessions and race-free refresh, per-route policy (assurance with step-up, principals, scopes, DPoP with optional server nonces) in observe, canary or enforce mode, forward auth for nginx, Caddy and Traefik.' },
      { area: 'up', text: '`keyplane up` (`npm start`) runs the control plane, a gateway registered as its client, and a demo app behind it.' },
      { area: 'gateway', text: 'Control plane side of the edge-gate: `GET /gateway/config` serves each gateway client its policy as a signed, versioned JWS (a registration update or key rotation is a new version at the next pull, within 5 s), `POST /gateway/evidence` takes the gateways\' signed evidence (pushed every 10 s), and `GET /gateway/status/{client_id}` shows declared config next to observed evidence: green only while fresh evidence matches.' },
    ],
  },
];
