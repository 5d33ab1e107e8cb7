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
    ],
  },
];
