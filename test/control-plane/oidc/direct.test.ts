import t from 'tap';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { build, TEST_ISSUER } from '../../helpers/build.js';
import { ADMIN, REDIRECT, exchangeCode, pkcePair, registerClient, type Registered } from '../../helpers/oidc.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { createOrg } from '../../../control-plane/src/orgs/membership.js';
import { managedAccountWithPasskey } from '../../helpers/fido-metadata.js';

const RP = 'https://notes.example.com';

async function setup(t: Parameters<typeof build>[0], metadata: Record<string, unknown> = {}) {
  const built = await build(t, { config: { adminToken: ADMIN } });
  const client = await registerClient(built.app, { in_place: true, ...metadata });
  return { ...built, client };
}

type App = Awaited<ReturnType<typeof setup>>['app'];

function post(app: App, url: string, payload: Record<string, unknown>, origin: string | null = RP) {
  return app.inject({ method: 'POST', url, payload, headers: origin ? { origin } : {} });
}

function grantBody(client: Registered, challenge: string, extra: Record<string, unknown> = {}) {
  return {
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st-1',
    nonce: 'n-1',
    scope: 'openid profile',
    ...extra,
  };
}

/** Signs up in place on a first-party client; returns the authenticator holding the new passkey. */
async function signUpInPlace(app: App, client: Registered, username = 'ada') {
  const authenticator = new SoftAuthenticator(RP);
  const started = await post(app, '/auth/authorize/direct/options', {
    client_id: client.client_id,
    username,
    signup: true,
  });
  if (started.statusCode !== 200) throw new Error(started.body);
  const { options, signupToken } = started.json();
  const pkce = pkcePair();
  const res = await post(
    app,
    '/auth/authorize/direct',
    grantBody(client, pkce.challenge, {
      registration: { user: username, response: authenticator.create(options), signupToken },
    }),
  );
  return { authenticator, res, pkce };
}

async function assertionBody(
  app: App,
  client: Registered,
  authenticator: SoftAuthenticator,
  tweaks: Record<string, unknown> = {},
  origin = RP,
) {
  const { options } = (
    await post(app, '/auth/authorize/direct/options', { client_id: client.client_id }, origin)
  ).json();
  return { user: undefined, response: authenticator.get(options, tweaks) };
}

t.test('a first-party client signs a new account up in place and exchanges the code at /auth/token', async (t) => {
  const { app, client, services } = await setup(t, { first_party: true });
  const { res, pkce } = await signUpInPlace(app, client);
  t.equal(res.statusCode, 200, res.body);
  t.equal(res.headers['access-control-allow-origin'], RP);
  t.equal(res.headers['access-control-allow-credentials'], 'true');
  t.notOk(res.headers['set-cookie'], 'no cookie of the issuer is set for the RP page');
  const { code, state, iss, receipt } = res.json();
  t.match({ code, state, iss }, { code: /^[A-Za-z0-9_-]{43}$/, state: 'st-1', iss: TEST_ISSUER });
  t.match(JSON.parse((await services.storage.receipts.get(receipt))!.body), {
    kind: 'signin.in_place',
    client_id: client.client_id,
    transport: 'direct',
    assurance: 'passkey',
  });
  const identity = await services.storage.identities.findByUsername('ada');
  t.ok(identity, 'the account exists');

  const tokens = await exchangeCode(app, client, code, pkce.verifier);
  t.equal(tokens.statusCode, 200, tokens.body);
  const jwks = createLocalJWKSet((await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json());
  const { payload } = await jwtVerify(tokens.json().id_token, jwks, {
    issuer: TEST_ISSUER,
    audience: client.client_id,
  });
  t.match(payload, { sub: identity!.identityId, nonce: 'n-1', svc: { assurance: 'passkey' } });
  const again = await exchangeCode(app, client, code, pkce.verifier);
  t.equal(again.json().reason, 'invalid_grant', 'the code is one-time');
});

t.test(
  'an existing passkey signs in on the RP origin; without an approval a third-party client is sent to the popup',
  async (t) => {
    const { app, client, services } = await setup(t, { first_party: true });
    const { authenticator } = await signUpInPlace(app, client);
    const other = await registerClient(app, { in_place: true });
    const pkce = pkcePair();
    const refused = await post(
      app,
      '/auth/authorize/direct',
      grantBody(other, pkce.challenge, { assertion: await assertionBody(app, other, authenticator) }),
    );
    t.equal(refused.statusCode, 403);
    t.equal(refused.json().reason, 'consent_required');
    const popup = new URL(refused.json().popup);
    t.equal(`${popup.origin}${popup.pathname}`, `${TEST_ISSUER}/auth/authorize`);
    t.equal(popup.searchParams.get('response_mode'), 'web_message');
    t.equal(popup.searchParams.get('code_challenge'), pkce.challenge);

    const identity = await services.storage.identities.findByUsername('ada');
    await services.storage.oidc.recordApproval(
      identity!.identityId,
      other.client_id,
      { scopes: ['openid', 'profile'], resources: [] },
      1,
    );
    const ok = await post(
      app,
      '/auth/authorize/direct',
      grantBody(other, pkce.challenge, { assertion: await assertionBody(app, other, authenticator) }),
    );
    t.equal(ok.statusCode, 200, ok.body);
    const tokens = await exchangeCode(app, other, ok.json().code, pkce.verifier);
    t.equal(tokens.statusCode, 200);
    const named = await post(app, '/auth/authorize/direct/options', { client_id: other.client_id, username: 'ada' });
    t.equal(named.json().options.allowCredentials.length, 1, 'a username limits the options to its passkeys');
  },
);

t.test('the options answer an unknown username in the shape of a known one (no account enumeration)', async (t) => {
  const { app, client } = await setup(t, { first_party: true });
  await signUpInPlace(app, client);
  const optionsFor = async (username: string) => {
    const res = await post(app, '/auth/authorize/direct/options', { client_id: client.client_id, username });
    t.equal(res.statusCode, 200, res.body);
    return res.json().options as { allowCredentials: Array<Record<string, unknown>> };
  };
  const known = await optionsFor('ada');
  const unknown = await optionsFor('nobody-here');
  t.equal(unknown.allowCredentials.length, 1, 'one credential id, like an account with one passkey');
  t.same(Object.keys(unknown).sort(), Object.keys(known).sort(), 'the same members');
  t.same(Object.keys(unknown.allowCredentials[0]!).sort(), Object.keys(known.allowCredentials[0]!).sort());
  t.equal(
    (unknown.allowCredentials[0]!.id as string).length,
    (known.allowCredentials[0]!.id as string).length,
    'an id of the same size',
  );
  t.same((await optionsFor('nobody-here')).allowCredentials, unknown.allowCredentials, 'stable per name');
  t.notSame((await optionsFor('someone-else')).allowCredentials, unknown.allowCredentials, 'another name, another id');
  const signIn = await app.inject({ method: 'GET', url: '/auth/assertion-options?user=nobody-here' });
  t.same(
    signIn.json().options.allowCredentials.map((c: { id: string }) => c.id),
    unknown.allowCredentials.map((c) => c.id),
    'the same decoy /auth/assertion-options gives',
  );
});

t.test('an account with TOTP active is refused with step_up_required and the popup URL', async (t) => {
  const { app, client, services } = await setup(t, { first_party: true });
  const { authenticator } = await signUpInPlace(app, client);
  const identity = await services.storage.identities.findByUsername('ada');
  await services.storage.totp.putPending({
    identityId: identity!.identityId,
    state: 'pending',
    sealedSecret: Buffer.from('x'),
    lastUsedStep: null,
    createdAt: 1,
    activatedAt: null,
  });
  await services.storage.totp.activate(identity!.identityId, 1, 2);
  const res = await post(
    app,
    '/auth/authorize/direct',
    grantBody(client, pkcePair().challenge, { assertion: await assertionBody(app, client, authenticator) }),
  );
  t.equal(res.statusCode, 403);
  t.equal(res.json().reason, 'step_up_required');
  t.equal(new URL(res.json().popup).searchParams.get('response_mode'), 'web_message');
  t.notOk(res.json().code);
});

t.test(
  'refusals: origins, redirect URIs, responses made for another origin, reused ceremonies, clients without in-place',
  async (t) => {
    const { app, client } = await setup(t, { first_party: true });
    const { authenticator } = await signUpInPlace(app, client);
    const other = await registerClient(app, { in_place: true, redirect_uris: ['https://other.example.org/cb'] });
    const challenge = pkcePair().challenge;

    for (const [name, origin] of [
      ['a foreign origin', 'https://evil.example.com'],
      ["another client's origin", 'https://other.example.org'],
      ['no Origin', null],
      ['the issuer', TEST_ISSUER],
    ] as const) {
      for (const url of ['/auth/authorize/direct/options', '/auth/authorize/direct']) {
        const res = await post(
          app,
          url,
          url.endsWith('options')
            ? { client_id: client.client_id }
            : grantBody(client, challenge, { assertion: { response: {} } }),
          origin,
        );
        t.equal(res.statusCode, 403, `${name} at ${url}`);
        t.equal(res.json().reason, 'origin_mismatch', `${name} at ${url}`);
        t.equal(res.headers['access-control-allow-origin'], undefined, `${name}: no CORS`);
        t.equal(res.headers['access-control-allow-credentials'], undefined, `${name}: no CORS`);
      }
    }
    t.equal(other.client_id.startsWith('cl_'), true);

    const unregistered = await post(
      app,
      '/auth/authorize/direct',
      grantBody(client, challenge, {
        redirect_uri: 'https://notes.example.com/elsewhere',
        assertion: await assertionBody(app, client, authenticator),
      }),
    );
    t.equal(unregistered.json().reason, 'invalid_redirect_uri', 'a code for an unregistered redirect');
    const plain = await post(
      app,
      '/auth/authorize/direct',
      grantBody(client, challenge, {
        code_challenge_method: 'plain',
        assertion: await assertionBody(app, client, authenticator),
      }),
    );
    t.equal(plain.json().reason, 'invalid_request', 'PKCE plain');
    const badScope = await post(
      app,
      '/auth/authorize/direct',
      grantBody(client, challenge, {
        scope: 'openid  admin',
        assertion: await assertionBody(app, client, authenticator),
      }),
    );
    t.equal(badScope.json().reason, 'invalid_scope');
    const both = await post(
      app,
      '/auth/authorize/direct',
      grantBody(client, challenge, {
        assertion: await assertionBody(app, client, authenticator),
        registration: { user: 'x', response: {} },
      }),
    );
    t.equal(both.json().reason, 'invalid_request', 'exactly one ceremony');

    const foreignResponse = await post(
      app,
      '/auth/authorize/direct',
      grantBody(client, challenge, {
        assertion: await assertionBody(app, client, authenticator, { origin: 'https://evil.example.com' }),
      }),
    );
    t.equal(foreignResponse.statusCode, 400);
    t.equal(foreignResponse.json().reason, 'webauthn_origin_mismatch', 'a passkey response made for another origin');
    t.notOk(foreignResponse.json().code);

    const onOtherOrigin = await assertionBody(app, other, authenticator, {}, 'https://other.example.org');
    const crossed = await post(
      app,
      '/auth/authorize/direct',
      grantBody(client, challenge, { assertion: onOtherOrigin }),
    );
    t.equal(crossed.json().reason, 'challenge_mismatch', 'a ceremony started for another client');

    const assertion = await assertionBody(app, client, authenticator);
    t.equal((await post(app, '/auth/authorize/direct', grantBody(client, challenge, { assertion }))).statusCode, 200);
    const replay = await post(app, '/auth/authorize/direct', grantBody(client, challenge, { assertion }));
    t.equal(replay.json().reason, 'challenge_unknown', 'a ceremony is one-use');

    const off = await registerClient(app, { redirect_uris: ['https://plain.example.net/cb'] });
    const disabled = await post(
      app,
      '/auth/authorize/direct/options',
      { client_id: off.client_id },
      'https://plain.example.net',
    );
    t.equal(disabled.json().reason, 'in_place_disabled');
    const unknown = await post(app, '/auth/authorize/direct/options', { client_id: 'cl_nobody' });
    t.equal(unknown.statusCode, 404);
  },
);

t.test('sign-up in place follows the sign-up rules and needs a first-party client', async (t) => {
  const { app, client } = await setup(t);
  const third = await post(app, '/auth/authorize/direct/options', {
    client_id: client.client_id,
    username: 'ada',
    signup: true,
  });
  t.equal(third.json().reason, 'consent_required');
  const first = await registerClient(app, { in_place: true, first_party: true });
  t.equal(
    (await post(app, '/auth/authorize/direct/options', { client_id: first.client_id, signup: true })).json().reason,
    'invalid_request',
    'a username is needed',
  );
  t.equal(
    (
      await post(app, '/auth/authorize/direct/options', { client_id: first.client_id, username: 'x', signup: true })
    ).json().reason,
    'invalid_username',
  );
  await signUpInPlace(app, first, 'ada');
  t.equal(
    (
      await post(app, '/auth/authorize/direct/options', { client_id: first.client_id, username: 'ada', signup: true })
    ).json().reason,
    'username_taken',
  );

  const started = (
    await post(app, '/auth/authorize/direct/options', { client_id: first.client_id, username: 'bob', signup: true })
  ).json();
  const response = new SoftAuthenticator(RP).create(started.options);
  const wrongToken = await post(
    app,
    '/auth/authorize/direct',
    grantBody(first, pkcePair().challenge, { registration: { user: 'bob', response, signupToken: 'x'.repeat(43) } }),
  );
  t.equal(wrongToken.json().reason, 'challenge_mismatch');

  const closed = await build(t, { config: { adminToken: ADMIN, 'signup.selfService': false } });
  const closedClient = await registerClient(closed.app, { in_place: true, first_party: true });
  t.equal(
    (
      await post(closed.app, '/auth/authorize/direct/options', {
        client_id: closedClient.client_id,
        username: 'ada',
        signup: true,
      })
    ).json().reason,
    'signup_closed',
  );
});

t.test('CORS preflight and related origins name only registered in-place origins', async (t) => {
  const { app } = await setup(t);
  await registerClient(app, { redirect_uris: ['https://plain.example.net/cb'] });
  const ok = await app.inject({
    method: 'OPTIONS',
    url: '/auth/authorize/direct',
    headers: { origin: RP, 'access-control-request-method': 'POST' },
  });
  t.equal(ok.statusCode, 204);
  t.match(ok.headers, {
    'access-control-allow-origin': RP,
    'access-control-allow-credentials': 'true',
    'access-control-allow-methods': 'POST',
    'access-control-allow-headers': 'Content-Type',
  });
  for (const origin of ['https://evil.example.com', 'https://plain.example.net']) {
    const refused = await app.inject({
      method: 'OPTIONS',
      url: '/auth/authorize/direct/options',
      headers: { origin, 'access-control-request-method': 'POST' },
    });
    t.equal(refused.headers['access-control-allow-origin'], undefined, origin);
  }
  const related = (await app.inject({ method: 'GET', url: '/.well-known/webauthn' })).json();
  t.same(related.origins.sort(), ['https://notes.example.com', 'https://staging.notes.example.com']);
});

t.test(
  'a disabled account is refused on the direct grant, and an approval without the resource does not cover it',
  async (t) => {
    const { app, client, services } = await setup(t, { first_party: true, resources: ['https://api.example.com'] });
    const { authenticator } = await signUpInPlace(app, client);
    const identity = (await services.storage.identities.findByUsername('ada'))!;
    const third = await registerClient(app, { in_place: true, resources: ['https://api.example.com'] });
    await services.storage.oidc.recordApproval(
      identity.identityId,
      third.client_id,
      { scopes: ['openid', 'profile'], resources: [] },
      1,
    );
    const pkce = pkcePair();
    const approvedScopes = await post(
      app,
      '/auth/authorize/direct',
      grantBody(third, pkce.challenge, { assertion: await assertionBody(app, third, authenticator) }),
    );
    t.equal(approvedScopes.statusCode, 200, `the approved scopes alone sign in: ${approvedScopes.body}`);
    const withResource = await post(
      app,
      '/auth/authorize/direct',
      grantBody(third, pkce.challenge, {
        resource: 'https://api.example.com',
        assertion: await assertionBody(app, third, authenticator),
      }),
    );
    t.equal(withResource.statusCode, 403, 'scope X approved without resource R does not cover a grant asking for R');
    t.equal(withResource.json().reason, 'consent_required');
    t.notOk(withResource.json().code);

    /** A grant with a fresh assertion: refused for this reason, with no code. */
    const refusedFor = async (reason: string) => {
      const res = await post(
        app,
        '/auth/authorize/direct',
        grantBody(client, pkce.challenge, { assertion: await assertionBody(app, client, authenticator) }),
      );
      t.equal(res.statusCode, 403);
      t.equal(res.json().reason, reason);
      t.notOk(res.json().code, 'no code');
      return res;
    };
    // Suspended by the org that manages it: the same refusal path, its own reason.
    await services.storage.identities.setSuspended(identity.identityId, services.now());
    await refusedFor('account_suspended');
    await services.storage.identities.setSuspended(identity.identityId, null);

    await app.inject({
      method: 'POST',
      url: `/admin/accounts/${identity.identityId}/disable`,
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    const disabled = await refusedFor('account_disabled');
    t.equal(disabled.headers['access-control-allow-origin'], RP, 'the refusal is readable by the registered origin');
    t.same(
      await services.storage.sessions.listLive(identity.identityId, services.now()),
      [],
      'no session was made for the grant',
    );
  },
);

t.test(
  "a client's access.orgs admits members in place and refuses others with access_denied and a receipt",
  async (t) => {
    const { app, client, services } = await setup(t, { first_party: true });
    const { authenticator } = await signUpInPlace(app, client, 'ada');
    const ada = await services.storage.identities.findByUsername('ada');
    await createOrg(services, ada!.identityId, { name: 'Acme' });
    const restricted = await registerClient(app, {
      in_place: true,
      first_party: true,
      access: { orgs: [{ slug: 'acme' }] },
    });
    const pkce = pkcePair();
    const member = await post(
      app,
      '/auth/authorize/direct',
      grantBody(restricted, pkce.challenge, { assertion: await assertionBody(app, restricted, authenticator) }),
    );
    t.equal(member.statusCode, 200, member.body);

    const { res } = await signUpInPlace(app, restricted, 'bob');
    t.equal(res.statusCode, 403);
    t.match(res.json(), { ok: false, reason: 'access_denied', error: 'access_denied' });
    const popup = new URL(res.json().popup);
    t.equal(popup.searchParams.get('response_mode'), 'web_message', 'the popup shows the person why');
    const bob = await services.storage.identities.findByUsername('bob');
    const events: unknown[] = [];
    for (const { hash } of await services.storage.receipts.pending(1000)) {
      const stored = await services.storage.receipts.get(hash);
      if (stored) events.push(JSON.parse(stored.body));
    }
    t.match(
      events.find((e) => (e as { kind: string }).kind === 'signin.access_denied'),
      { client_id: restricted.client_id, transport: 'direct', identityId: bob!.identityId, refusal: 'no_rule_matched' },
    );
  },
);

t.test(
  "an org's managed account: its passkey policy holds in place, and with required SSO a passkey alone gets no code",
  async (t) => {
    const { app, client, services } = await setup(t, { first_party: true });
    await signUpInPlace(app, client, 'olivia');
    const olivia = await services.storage.identities.findByUsername('olivia');
    const { org } = await createOrg(services, olivia!.identityId, { name: 'Acme' });
    // Mia is managed by Acme (as JIT or SCIM leave her); her passkey was made at the issuer.
    const phone = new SoftAuthenticator(TEST_ISSUER);
    const AAGUID = 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4';
    await managedAccountWithPasskey(services, { username: 'mia', orgId: org.orgId, label: 'Phone' }, phone, {
      aaguid: AAGUID,
    });
    const signIn = async () =>
      post(
        app,
        '/auth/authorize/direct',
        grantBody(client, pkcePair().challenge, { assertion: await assertionBody(app, client, phone, { origin: RP }) }),
      );
    t.equal((await signIn()).statusCode, 200, 'no policy, no required connection: a code');

    // The org denies that authenticator; the passkey was registered before, but the policy's grace is 0 days.
    const now = services.now();
    await services.storage.orgs.putPasskeyPolicy({
      orgId: org.orgId,
      aaguidsAllowed: [],
      aaguidsDenied: [AAGUID],
      attestation: 'none',
      effectiveAt: now,
      graceUntil: now,
      updatedBy: olivia!.identityId,
    });
    const denied = await signIn();
    t.equal(denied.statusCode, 403);
    t.match(denied.json(), { reason: 'authenticator_not_allowed', why: 'denied', authenticator: { aaguid: AAGUID } });
    await services.storage.orgs.putPasskeyPolicy({
      orgId: org.orgId,
      aaguidsAllowed: [],
      aaguidsDenied: [],
      attestation: 'none',
      effectiveAt: now,
      graceUntil: now,
      updatedBy: olivia!.identityId,
    });

    // Required SSO (docs/federation.md#required-sso): the passkey is only the step-up after the upstream.
    await services.storage.connections.insert({
      connectionId: 'con_acme',
      orgId: org.orgId,
      type: 'oidc',
      name: 'Acme SSO',
      settings: {
        issuer: 'https://login.acme.example',
        clientId: 'kp',
        tokenEndpointAuthMethod: 'client_secret_basic',
        scopes: ['openid'],
      },
      secretSealed: null,
      domains: ['acme.example'],
      jit: null,
      required: true,
      maxAssurance: 'email',
      sessionMaxHours: 12,
      createdAt: now,
      updatedAt: now,
    });
    const refused = await signIn();
    t.equal(refused.statusCode, 403);
    t.equal(refused.json().reason, 'sso_required');
    t.equal(
      new URL(refused.json().popup).searchParams.get('response_mode'),
      'web_message',
      'the popup signs in upstream',
    );
    t.same(
      (await services.storage.sessions.listLive('usr_mia', services.now())).length,
      1,
      'only the session of the first sign-in',
    );
  },
);
