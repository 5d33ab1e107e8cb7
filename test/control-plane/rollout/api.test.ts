import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { SignJWT, UnsecuredJWT, generateKeyPair } from 'jose';
import { ADMIN } from '../../helpers/oidc.js';
import { TEST_ISSUER } from '../../helpers/build.js';
import { evidence, gatewayKey, postEvidence, setup } from '../managed-gateways/setup.js';

const admin = { authorization: `Bearer ${ADMIN}` };
const GATE = 'https://shop.example.com/_gate/callback';
const STAGING = 'https://staging.shop.example.com/_gate/callback';

const PROFILE_YAML = `
contract: project-trust-profile/v1
project: shop
org: acme
exposure: public
principals: { humans: true, agents: false }
environments:
  - name: production
    redirect_uris: [${GATE}]
    resources: [https://shop.example.com/api]
  - name: staging
    redirect_uris: [${STAGING}]
    resources: []
data_class: confidential
required_assurance: passkey
`;

function classify(app: FastifyInstance, document: unknown) {
  return app.inject({ method: 'POST', url: '/rollout/documents', headers: admin, payload: { document } });
}

function post(app: FastifyInstance, url: string, payload: Record<string, unknown> = {}) {
  return app.inject({ method: 'POST', url, headers: admin, payload });
}

async function registered(app: FastifyInstance) {
  const classified = await classify(app, PROFILE_YAML);
  if (classified.statusCode !== 200) throw new Error(classified.body);
  const res = await post(app, '/rollout/projects/shop/register');
  if (res.statusCode !== 200) throw new Error(res.body);
  return res.json();
}

t.test('classify validates, signs and versions a profile; the same content twice signs nothing new', async (t) => {
  const { app } = await setup(t);
  const first = await classify(app, PROFILE_YAML);
  t.equal(first.statusCode, 200);
  t.match(first.json(), {
    ok: true,
    kind: 'profile',
    project: 'shop',
    version: 1,
    created: true,
    receipt: /^[0-9a-f]{64}$/,
  });
  const header = JSON.parse(Buffer.from(first.json().jws.split('.')[0], 'base64url').toString());
  t.match(header, { alg: 'ES256', typ: 'project-trust-profile+jwt', kid: String });
  const again = await classify(app, PROFILE_YAML);
  t.match(again.json(), { version: 1, created: false, jws: first.json().jws }, 'idempotent');
  // docs/rollout.md: resources 0..20, so an environment without any may leave them out (the same content).
  const noResources = await classify(app, PROFILE_YAML.replace('    resources: []\n', ''));
  t.match(noResources.json(), { ok: true, version: 1, created: false }, 'resources left out read as none');
  const json = await classify(app, { ...(await import('yaml')).parse(PROFILE_YAML), data_class: 'restricted' });
  t.match(json.json(), { version: 2, created: true }, 'a change is the next version (JSON object accepted too)');
  const signedBack = await classify(app, first.json().jws);
  t.match(
    signedBack.json(),
    { ok: true, version: 3, created: true },
    'a JWS signed here is accepted as a document (version 1 content again)',
  );

  const bad = await classify(app, 'contract: project-trust-profile/v1\nproject: Shop!\nexposure: everywhere\n');
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().reason, 'invalid_profile');
  t.ok(
    bad.json().problems.some((p: string) => p.startsWith('project ')),
    'names the path of each problem',
  );
  t.ok(bad.json().problems.some((p: string) => /exposure must be one of/.test(p)));
  t.ok(bad.json().problems.some((p: string) => /must have required property 'principals'/.test(p)));
  const http = await classify(app, PROFILE_YAML.replace(GATE, 'http://shop.example.com/_gate/callback'));
  t.match(http.json(), { reason: 'invalid_profile', message: /redirect_uris\.0 must use https/ });
});

t.test('an unsigned or re-signed profile is refused', async (t) => {
  const { app } = await setup(t);
  const signed = (await classify(app, PROFILE_YAML)).json();
  const payload = JSON.parse(Buffer.from(signed.jws.split('.')[1], 'base64url').toString());

  const unsigned = new UnsecuredJWT(payload).encode();
  const none = await classify(app, unsigned);
  t.equal(none.statusCode, 400);
  t.equal(none.json().reason, 'profile_unsigned');

  const { privateKey } = await generateKeyPair('ES256');
  const header = JSON.parse(Buffer.from(signed.jws.split('.')[0], 'base64url').toString());
  const foreign = await new SignJWT(payload).setProtectedHeader(header).sign(privateKey);
  const resigned = await classify(app, foreign);
  t.equal(resigned.statusCode, 400);
  t.equal(resigned.json().reason, 'profile_signature_invalid', 're-signed with the same kid but another key');

  const register = await post(app, '/rollout/projects/shop/register', { profile: foreign });
  t.equal(register.json().reason, 'profile_signature_invalid', 'registration refuses it too');
  const registerUnsigned = await post(app, '/rollout/projects/shop/register', { profile: unsigned });
  t.equal(registerUnsigned.json().reason, 'profile_unsigned');
  const plain = await post(app, '/rollout/projects/shop/register', { profile: JSON.stringify(payload.profile) });
  t.equal(plain.json().reason, 'profile_unsigned', 'a bare document is not a signed profile');
  const ok = await post(app, '/rollout/projects/shop/register', { profile: signed.jws });
  t.equal(ok.statusCode, 200, 'the genuine signed profile registers');
});

t.test('register makes the client from the profile, once; the profile constrains it afterwards', async (t) => {
  const { app } = await setup(t);
  t.equal((await classify(app, PROFILE_YAML)).statusCode, 200);
  const outside = await post(app, '/rollout/projects/shop/register', {
    redirect_uris: ['https://evil.example.com/_gate/callback'],
  });
  t.equal(outside.statusCode, 400);
  t.match(outside.json(), {
    reason: 'outside_trust_profile',
    error: 'invalid_redirect_uri',
    message: /evil\.example\.com.*production, staging/,
  });
  const badResource = await post(app, '/rollout/projects/shop/register', {
    resources: ['https://api.other.example.com'],
  });
  t.match(badResource.json(), { reason: 'outside_trust_profile', violations: [{ field: 'resources' }] });

  const first = await post(app, '/rollout/projects/shop/register');
  t.equal(first.statusCode, 200);
  const { client } = first.json();
  t.match(first.json(), {
    created: true,
    project: { stage: 'registered', status: 'unverified', reason: 'no_evidence' },
  });
  t.match(client, {
    client_secret: String,
    registration_access_token: String,
    redirect_uris: [GATE, STAGING],
    resources: ['https://shop.example.com/api'],
    access: { humans: true, agents: false },
    gateway: { mode: 'observe', routes: [{ path: '/' }] },
  });
  const again = await post(app, '/rollout/projects/shop/register');
  t.match(again.json(), { created: false, client: { client_id: client.client_id } });
  t.notOk(again.json().client.client_secret, 'no secret is issued again');

  // The floor: the signed config asks for passkey on every protected route and admits humans only.
  const config = await app.inject({
    method: 'GET',
    url: '/gateway/config',
    headers: {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
    },
  });
  const issued = JSON.parse(Buffer.from(config.body.split('.')[1]!, 'base64url').toString());
  t.same(issued.gateway.routes, [{ path: '/', min_assurance: 'passkey', principals: ['human'] }]);

  const token = { authorization: `Bearer ${client.registration_access_token}` };
  const current = (await app.inject({ method: 'GET', url: `/register/${client.client_id}`, headers: token })).json();
  const put = (changes: Record<string, unknown>) =>
    app.inject({
      method: 'PUT',
      url: `/register/${client.client_id}`,
      headers: token,
      payload: { ...current, client_id: client.client_id, revision: current.revision, ...changes },
    });
  const redirect = await put({ redirect_uris: [GATE, 'https://new.example.com/_gate/callback'] });
  t.equal(redirect.statusCode, 400);
  t.match(redirect.json(), { reason: 'outside_trust_profile', message: /new\.example\.com/ });
  const agents = await put({ access: { humans: true, agents: true } });
  t.match(agents.json(), { reason: 'outside_trust_profile', message: /admits no agents/ });
  const lower = await put({
    gateway: {
      mode: 'observe',
      routes: [
        { path: '/', min_assurance: 'email' },
        { path: '/bots', principals: ['human', 'agent'] },
      ],
    },
  });
  t.equal(lower.statusCode, 200, 'a weaker route is accepted, and raised to the floor when issued');
  const raised = await app.inject({ method: 'GET', url: `/projects/${client.client_id}/profile`, headers: admin });
  t.same(raised.json().gateway_policy.policy.routes, [
    { path: '/', min_assurance: 'passkey', principals: ['human'] },
    { path: '/bots', min_assurance: 'passkey', principals: ['human'] },
  ]);

  const narrower = PROFILE_YAML.replace(
    `    redirect_uris: [${STAGING}]`,
    '    redirect_uris: [https://staging2.shop.example.com/_gate/callback]',
  );
  const notCovering = await classify(app, narrower);
  t.equal(notCovering.statusCode, 400);
  t.match(
    notCovering.json(),
    { reason: 'outside_trust_profile', message: /staging\.shop\.example\.com/ },
    'a profile must cover the registered redirect URIs',
  );
});

t.test('a migration plan is validated against the profile versions and signed as migration-plan+jwt', async (t) => {
  const { app } = await setup(t);
  const plan = {
    contract: 'migration-plan/v1',
    project: 'shop',
    profile_version: 1,
    team: 'shop-team',
    from: 'v1_bridge',
    to: 'gateway',
    steps: [{ step: 'register' }, { step: 'verify' }, { step: 'canary', percent: 10 }, { step: 'attest' }],
    rollback: 'set the gateway to observe',
  };
  t.match((await classify(app, plan)).json(), {
    reason: 'invalid_profile',
    message: /classify its trust profile first/,
  });
  await classify(app, PROFILE_YAML);
  const signed = await classify(app, plan);
  t.match(signed.json(), { ok: true, kind: 'plan', version: 1 });
  t.equal(JSON.parse(Buffer.from(signed.json().jws.split('.')[0], 'base64url').toString()).typ, 'migration-plan+jwt');
  t.match((await classify(app, { ...plan, steps: [{ step: 'canary', percent: 150 }] })).json(), {
    reason: 'invalid_profile',
    problems: [/steps\.0\.percent must be <= 100/],
  });
});

t.test('attest needs a passing verification and fresh evidence; canary is bounded and revision-guarded', async (t) => {
  const { app, clock } = await setup(t);
  const { client } = await registered(app);
  const canary150 = await post(app, '/rollout/projects/shop/canary', { percent: 150 });
  t.equal(canary150.statusCode, 400);
  t.equal(canary150.json().reason, 'invalid_request');
  const early = await post(app, '/rollout/projects/shop/attest');
  t.equal(early.statusCode, 409);
  t.equal(early.json().reason, 'verification_required');

  const failing = await post(app, '/rollout/projects/shop/verifications', {
    checks: [{ name: 'pkce', ok: true, detail: 'refused' }],
  });
  t.match(failing.json(), {
    passed: false,
    checks: [
      { name: 'pkce', ok: true },
      { name: 'registration', ok: true },
      { name: 'evidence', ok: false, detail: /no gateway has reported/ },
    ],
  });
  t.equal((await post(app, '/rollout/projects/shop/attest')).json().reason, 'verification_required');

  const key = await gatewayKey();
  const slice = async () => (await app.inject({ method: 'GET', url: '/rollout/projects/shop', headers: admin })).json();
  const report = async () => {
    const declared = (await slice()).gateway_policy;
    const gateway = { ...client, client_secret: client.client_secret };
    await postEvidence(
      app,
      gateway,
      await evidence(key, client.client_id, clock.now(), {
        config: { version: declared.version, hash: declared.hash, mode: declared.policy.mode },
      }),
    );
  };
  await report();
  t.match(
    await slice(),
    { status: 'unverified', reason: 'observing', observed: { fresh_instances: 1 } },
    'matching evidence of an observing policy is not enforcement',
  );
  const passing = await post(app, '/rollout/projects/shop/verifications', {
    checks: [{ name: 'discovery', ok: true, detail: 'ok' }],
  });
  t.match(passing.json(), { passed: true });

  const stale = await post(app, '/rollout/projects/shop/canary', { percent: 10, revision: client.revision + 5 });
  t.equal(stale.statusCode, 409);
  t.equal(stale.json().reason, 'stale_revision');
  const canary = await post(app, '/rollout/projects/shop/canary', { percent: 10, revision: client.revision });
  t.match(canary.json(), {
    changed: true,
    project: {
      stage: 'canary',
      declared: { mode: 'canary', canary_percent: 10 },
      status: 'mismatch',
      reason: 'config_mismatch',
    },
  });
  const repeat = await post(app, '/rollout/projects/shop/canary', { percent: 10 });
  t.match(repeat.json(), { changed: false });
  const old = await post(app, '/rollout/projects/shop/canary', { percent: 20, revision: client.revision });
  t.equal(old.json().reason, 'stale_revision', 'the revision moved on with the canary: reported, not overwritten');
  t.equal((await slice()).declared.canary_percent, 10);

  t.equal(
    (await post(app, '/rollout/projects/shop/attest')).json().reason,
    'evidence_not_fresh',
    'the gateway has not reported the canary config',
  );
  await report();
  clock.advance(31_000);
  t.match(await slice(), { status: 'stale', reason: 'evidence_expired' });
  t.equal((await post(app, '/rollout/projects/shop/attest')).json().reason, 'evidence_not_fresh');
  await report();
  const attested = await post(app, '/rollout/projects/shop/attest');
  t.equal(attested.statusCode, 200);
  t.match(attested.json(), {
    changed: true,
    attestation: String,
    project: { stage: 'attested', declared: { mode: 'enforce' }, status: 'mismatch' },
  });
  const claims = JSON.parse(Buffer.from(attested.json().attestation.split('.')[1], 'base64url').toString());
  t.match(claims, {
    iss: TEST_ISSUER,
    sub: client.client_id,
    project: 'shop',
    profile: { version: 1 },
    policy: { mode: 'enforce' },
  });
  await report();
  t.match(
    await slice(),
    { status: 'enforced', reason: 'enforcing_declared_config' },
    'enforced once fresh evidence of the enforce config arrives',
  );
  t.match((await post(app, '/rollout/projects/shop/attest')).json(), {
    changed: false,
    attestation: attested.json().attestation,
  });
});

t.test(
  '/rollout and project slices: the operator sees all; owners and org admins their own; others get 404',
  async (t) => {
    const { app, signIn } = await setup(t);
    const { client } = await registered(app);
    const truth = await app.inject({ method: 'GET', url: '/rollout?format=json', headers: admin });
    t.match(truth.json(), {
      ok: true,
      projects: [
        {
          project: 'shop',
          client_id: client.client_id,
          declared: { mode: 'observe', required_assurance: 'passkey' },
          observed: { instances: 0 },
          status: 'unverified',
        },
      ],
    });

    const stranger = await signIn({ username: 'stranger' });
    t.same((await stranger.browser.get('/rollout?format=json')).json().projects, [], 'a stranger sees no project');
    t.equal((await stranger.browser.get(`/projects/${client.client_id}/profile`)).statusCode, 404);
    const founder = await signIn({ username: 'founder', founder: true });
    t.equal(
      (await founder.browser.get(`/projects/${client.client_id}/profile`)).statusCode,
      404,
      'the founder without a console session sees its own projects only',
    );
    const operator = await signIn({ username: 'founder', console: 'auditor' });
    t.equal(
      (await operator.browser.get(`/projects/${client.client_id}/profile`)).statusCode,
      200,
      'with a console session it sees every project',
    );

    const orgAdmin = await signIn({ username: 'orgadmin' });
    const created = await orgAdmin.browser.post('/auth/orgs/create', { name: 'Acme' });
    t.equal(created.json().slug, 'acme');
    const slice = await orgAdmin.browser.get(`/projects/${client.client_id}/profile`);
    t.equal(slice.statusCode, 200, "an admin of the profile's org reads the slice");
    t.match(slice.json(), {
      project: 'shop',
      profile: { version: 1, document: { org: 'acme' } },
      registration: { client_id: client.client_id },
      evidence: [],
    });
    const html = await orgAdmin.browser.get('/rollout', { accept: 'text/html' });
    t.match(html.body, /<td class="status-unverified" data-status="unverified">unverified/);
    t.equal(
      (await app.inject({ method: 'GET', url: '/rollout', headers: { accept: 'text/html' } })).statusCode,
      303,
      'no session: to sign-in',
    );
    t.equal(
      (await app.inject({ method: 'GET', url: '/rollout', headers: { authorization: 'Bearer wrong' } })).statusCode,
      401,
    );
  },
);

t.test('/openapi.json publishes the one profile and plan schema and every rollout path', async (t) => {
  const { app } = await setup(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const { TRUST_PROFILE_SCHEMA, MIGRATION_PLAN_SCHEMA } = await import('#lib/profiles/documents.js');
  t.match(doc.components.schemas.ProjectTrustProfile, {
    title: TRUST_PROFILE_SCHEMA.title,
    required: [...TRUST_PROFILE_SCHEMA.required],
  });
  t.match(doc.components.schemas.MigrationPlan, {
    title: MIGRATION_PLAN_SCHEMA.title,
    required: [...MIGRATION_PLAN_SCHEMA.required],
  });
  for (const path of [
    '/rollout',
    '/projects/{client_id}/profile',
    '/rollout/documents',
    '/rollout/projects/{project}',
    '/rollout/projects/{project}/register',
    '/rollout/projects/{project}/verifications',
    '/rollout/projects/{project}/canary',
    '/rollout/projects/{project}/attest',
  ])
    t.ok(doc.paths[path], path);
});

// docs/errors.md#one-error-path: the rollout pages answer a browser's refusal with a page, with the
// same status and headers; the CLI and other API callers keep the envelope byte for byte.
t.test("a browser's refusal on the rollout pages is a page; API callers keep the envelope", async (t) => {
  const { signIn } = await setup(t);
  const { browser } = await signIn({ username: 'rita' });
  const navigation = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'accept-language': 'es' };
  // An unknown client, or one the person may not see; then a wrong admin token (WWW-Authenticate kept).
  for (const [url, headers, status, reason, message] of [
    ['/projects/app_nope/profile', {}, 404, 'not_found', 'no project is registered with this client'],
    ['/rollout', { authorization: 'Bearer wrong' }, 401, 'unauthorized', 'send the admin token as a Bearer token'],
  ] as const) {
    const page = await browser.get(url, { ...headers, ...navigation });
    t.equal(page.statusCode, status);
    t.match(page.headers, { 'content-type': /^text\/html/, 'content-security-policy': /script-src 'nonce-/ });
    t.match(page.body, `<code data-reason="${reason}">`);
    t.match(page.body, '<html lang="es"');
    if (status === 401) t.equal(page.headers['www-authenticate'], 'Bearer error="invalid_token"');
    for (const accept of ['application/json', '*/*']) {
      const json = await browser.get(url, { ...headers, accept });
      t.equal(json.statusCode, status);
      t.equal(json.body, JSON.stringify({ ok: false, reason, message }), `${url} ${accept}`);
    }
  }
});
