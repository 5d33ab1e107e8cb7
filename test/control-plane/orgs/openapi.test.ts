import t from 'tap';
import { build } from '../../helpers/build.js';

/** Every organization, scan, seal and verification path, as the routes register them. */
const PATHS: Array<[string, string]> = [
  ['post', '/auth/orgs/create'],
  ['get', '/org/{slug}'],
  ['post', '/org/{slug}/websites/add'],
  ['post', '/org/{slug}/websites/remove'],
  ['post', '/org/{slug}/websites/primary'],
  ['post', '/org/{slug}/websites/verify'],
  ['post', '/org/{slug}/members/role'],
  ['post', '/org/{slug}/members/remove'],
  ['post', '/org/{slug}/members/invite'],
  ['post', '/org/{slug}/members/accept'],
  ['post', '/org/{slug}/scan'],
  // Proved mail domains (docs/orgs.md#mail-domains).
  ['get', '/org/{slug}/mail-domains'],
  ['post', '/org/{slug}/mail-domains'],
  ['post', '/org/{slug}/mail-domains/{domain}/verify'],
  ['delete', '/org/{slug}/mail-domains/{domain}'],
  // The passkey policy of the accounts the org manages (docs/passkeys.md#org-policy).
  ['get', '/org/{slug}/passkey-policy'],
  ['put', '/org/{slug}/passkey-policy'],
  ['post', '/org/{slug}/passkey-policy/preview'],
  // SCIM tokens (docs/scim.md#tokens).
  ['post', '/org/{slug}/scim-tokens'],
  ['get', '/org/{slug}/scim-tokens'],
  ['delete', '/org/{slug}/scim-tokens/{tokenId}'],
  // Teams (docs/orgs.md#teams), with the dashboard's form twins.
  ['get', '/org/{slug}/teams'],
  ['post', '/org/{slug}/teams'],
  ['put', '/org/{slug}/teams/{team}'],
  ['delete', '/org/{slug}/teams/{team}'],
  ['post', '/org/{slug}/teams/{team}/rename'],
  ['post', '/org/{slug}/teams/{team}/delete'],
  ['put', '/org/{slug}/teams/{team}/members/{identityId}'],
  ['delete', '/org/{slug}/teams/{team}/members/{identityId}'],
  ['post', '/org/{slug}/teams/{team}/members/add'],
  ['post', '/org/{slug}/members/{identityId}/enrolment-link'],
  ['post', '/org/{slug}/members/enrolment-link'],
  ['post', '/org/{slug}/teams/{team}/members/remove'],
  // An org's webhooks (the webhooks area, docs/events.md#webhooks).
  ['post', '/org/{slug}/webhooks'],
  ['get', '/org/{slug}/webhooks'],
  ['get', '/org/{slug}/webhooks/{webhookId}'],
  ['put', '/org/{slug}/webhooks/{webhookId}'],
  ['delete', '/org/{slug}/webhooks/{webhookId}'],
  ['post', '/org/{slug}/webhooks/{webhookId}/rotate-secret'],
  ['post', '/org/{slug}/webhooks/{webhookId}/test'],
  ['get', '/org/{slug}/webhooks/{webhookId}/deliveries'],
  // An org's connections (the federation area, docs/federation.md).
  ['post', '/org/{slug}/connections'],
  ['get', '/org/{slug}/connections'],
  ['get', '/org/{slug}/connections/{connectionId}'],
  ['put', '/org/{slug}/connections/{connectionId}'],
  ['delete', '/org/{slug}/connections/{connectionId}'],
  ['get', '/org/{slug}/connections/{connectionId}/test'],
  ['post', '/org/{slug}/connections/{connectionId}/test'],
  // An org's APIs (the apis area, docs/apis.md).
  ['post', '/org/{slug}/apis'],
  ['get', '/org/{slug}/apis'],
  ['get', '/org/{slug}/apis/{apiId}'],
  ['put', '/org/{slug}/apis/{apiId}'],
  ['delete', '/org/{slug}/apis/{apiId}'],
  ['post', '/scan'],
  ['get', '/scan'],
  ['get', '/embed/seal.js'],
  ['get', '/embed/seal.json'],
  ['get', '/verify/{siteId}'],
];

/** Path prefixes of this area in the document. */
const PREFIXES = ['/org/', '/auth/orgs/', '/scan', '/embed/', '/verify/'];

t.test('/openapi.json describes every org, scan, seal and verify path with a summary and its answers', async (t) => {
  const { app } = await build(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const [method, path] of PATHS) {
    const operation = doc.paths[path]?.[method];
    t.ok(operation, `${method.toUpperCase()} ${path}`);
    t.ok(operation?.summary, `${method.toUpperCase()} ${path}: summary`);
    t.ok(
      operation?.responses?.['200'] ?? operation?.responses?.['201'] ?? operation?.responses?.['303'],
      `${method.toUpperCase()} ${path}: a success answer`,
    );
  }
});

t.test('the list is the area: each path is a real route, and the document has no other path of the area', async (t) => {
  const { app } = await build(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const [method, path] of PATHS) {
    const url = path.replace(/\{([A-Za-z]+)\}/g, ':$1');
    t.ok(
      app.hasRoute({ method: method.toUpperCase() as 'GET' | 'POST' | 'PUT' | 'DELETE', url }),
      `${method.toUpperCase()} ${path} is a route`,
    );
  }
  const listed = new Set(PATHS.map(([method, path]) => `${method} ${path}`));
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    if (!PREFIXES.some((prefix) => path.startsWith(prefix))) continue;
    for (const method of Object.keys(operations))
      t.ok(listed.has(`${method} ${path}`), `${method.toUpperCase()} ${path} is in the list`);
  }
});
