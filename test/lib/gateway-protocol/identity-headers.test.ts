import t from 'tap';
import {
  buildIdentityHeaders,
  isIdentityHeaderName,
  normalizeHeaderName,
  stripIdentityHeaders,
} from '#lib/gateway-protocol/identity-headers.js';

const NAMES = ['X-Auth-Subject', 'X-Auth-Principal-Type', 'X-Auth-Assurance', 'X-Auth-Email', 'X-Auth-Assertion'];

function spellings(name: string): string[] {
  const lower = name.toLowerCase();
  return [
    name,
    lower,
    name.toUpperCase(),
    name.replace(/-/g, '_'),
    lower.replace(/-/g, '.'),
    name.replace(/-/g, '.'),
    lower.replace(/-/, '_').replace(/-/g, '.'),
    `x-AUTH_${name.slice(7)}`,
  ];
}

t.test('recognises every identity header in every spelling', async (t) => {
  for (const name of NAMES) {
    for (const spelling of spellings(name)) t.ok(isIdentityHeaderName(spelling), spelling);
  }
  t.ok(isIdentityHeaderName('x-auth-anything-new'), 'any x-auth-* to be safe');
  t.ok(isIdentityHeaderName('X_AUTH.Whatever'));
});

t.test('leaves other headers alone', async (t) => {
  for (const name of [
    'authorization',
    'x-authorization',
    'x-auth',
    'cookie',
    'x-forwarded-for',
    'auth-subject',
    'xauth-subject',
  ])
    t.notOk(isIdentityHeaderName(name), name);
  t.equal(normalizeHeaderName('X_Auth.Subject'), 'x-auth-subject');
});

t.test('strips them all from a header object and reports which', async (t) => {
  const headers: Record<string, unknown> = {
    host: 'a',
    'x-auth-subject': 'evil',
    x_auth_subject: 'evil',
    'x.auth.email': 'e',
    'X-AUTH-ASSURANCE': 'sensitive',
    accept: '*/*',
  };
  const removed = stripIdentityHeaders(headers);
  t.same(Object.keys(headers).sort(), ['accept', 'host']);
  t.equal(removed.length, 4);
});

t.test('sends the email only when it is verified', async (t) => {
  const base = {
    subject: 'u1',
    principalType: 'human' as const,
    assurance: 'passkey',
    assertion: 'jwt',
    email: 'a@example.test',
  };
  t.same(buildIdentityHeaders({ ...base, emailVerified: true }), {
    'x-auth-subject': 'u1',
    'x-auth-principal-type': 'human',
    'x-auth-assurance': 'passkey',
    'x-auth-assertion': 'jwt',
    'x-auth-email': 'a@example.test',
  });
  t.notOk('x-auth-email' in buildIdentityHeaders({ ...base, emailVerified: false }));
  t.notOk('x-auth-email' in buildIdentityHeaders(base));
});

t.test('sends the memberships as slug:role, comma-separated, and nothing for none', async (t) => {
  const base = { subject: 'u1', principalType: 'human' as const, assurance: 'passkey', assertion: 'jwt' };
  const orgs = [
    { slug: 'acme', role: 'admin' },
    { slug: 'ops', role: 'member' },
  ];
  t.equal(buildIdentityHeaders({ ...base, orgs })['x-auth-orgs'], 'acme:admin,ops:member');
  t.notOk('x-auth-orgs' in buildIdentityHeaders({ ...base, orgs: [] }));
  t.notOk('x-auth-orgs' in buildIdentityHeaders(base));
});

t.test('sends the teams as <org>/<team>, comma-separated, and nothing for none', async (t) => {
  const base = { subject: 'u1', principalType: 'human' as const, assurance: 'passkey', assertion: 'jwt' };
  t.equal(buildIdentityHeaders({ ...base, groups: ['acme/eng', 'acme/ops'] })['x-auth-groups'], 'acme/eng,acme/ops');
  t.notOk('x-auth-groups' in buildIdentityHeaders({ ...base, groups: [] }));
  t.notOk('x-auth-groups' in buildIdentityHeaders(base));
});

t.test('X-Auth-Actor names the one acting now: the outermost actor of the chain', async (t) => {
  const base = { subject: 'u1', principalType: 'human' as const, assurance: 'passkey', assertion: 'jwt' };
  t.equal(buildIdentityHeaders({ ...base, actors: ['agt_1', 'cl_notes'] })['x-auth-actor'], 'agt_1');
  t.notOk('x-auth-actor' in buildIdentityHeaders({ ...base, actors: [] }));
  t.notOk('x-auth-actor' in buildIdentityHeaders(base));
});
