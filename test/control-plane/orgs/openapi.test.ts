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
      app.hasRoute({ method: method.toUpperCase() as 'GET' | 'POST', url }),
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
