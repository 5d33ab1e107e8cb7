import t from 'tap';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { build } from '../../helpers/build.js';

const PATHS = [
  '/auth/agents/proof/enroll/begin',
  '/auth/agents/proof/enroll/approve',
  '/auth/agents/proof/enroll/complete',
  '/auth/agents/proof/enroll/status',
  '/auth/agents/proof/lifecycle',
  '/auth/agents/proof/key-rotate',
  '/auth/agents/proof/transfer/begin',
  '/auth/agents/proof/transfer/accept',
  '/auth/agents/proof/visibility',
  '/auth/agents/proof/dns-challenge',
  '/auth/agents/proof/dns-verify',
  '/auth/agents/proof/a2a-discover',
  '/auth/agents/proof/grants',
  '/auth/agents/proof/grants/revoke',
  '/agent/{proof_id}',
  '/agent/{proof_id}.json',
  '/api/agent-proof/challenge',
  '/api/agent-proof/verify',
  '/api/agent-proof/run',
  '/api/agent-trust/bundle',
];

t.test('every agent path is described in /openapi.json', async (t) => {
  const { app } = await build(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const path of PATHS) t.ok(doc.paths[path], path);
  for (const path of ['/agent/{proof_id}', '/agent/{proof_id}.json']) {
    const get = doc.paths[path]?.get;
    t.match(get?.parameters, [{ in: 'path', name: 'proof_id', required: true }], `${path} names its parameter`);
    t.ok(get?.responses?.['404'] ?? get?.responses?.['4XX'], `${path} documents its refusal`);
  }
  t.notOk(doc.paths['/agent/{proofRef}'], 'no made-up parameter name');
});

t.test('the trust bundle is a JWS signed with the issuer key', async (t) => {
  const { app } = await build(t);
  const res = await app.inject({ method: 'GET', url: '/api/agent-trust/bundle' });
  t.equal(res.statusCode, 200);
  const jwks = createLocalJWKSet((await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json());
  const { payload } = await jwtVerify(res.json().bundle, jwks, {
    issuer: 'http://localhost:4400',
    typ: 'agent-trust-bundle+jwt',
  });
  t.same(payload.run_proof_formats, ['svc-agent-run-proof-v1']);
});
