import t from 'tap';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { loadControlPlaneConfig } from '#config/load.js';
import type { ControlPlaneConfig } from '#config/types.js';
import { computeS256Challenge } from '#lib/pkce/check-pkce.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { authorizationCodeGrant } from '../../../../control-plane/src/oidc/grants/authorization-code.js';
import { refreshTokenGrant } from '../../../../control-plane/src/oidc/grants/refresh-token.js';
import { openControlPlaneServices, type RunningServices } from '../../../../control-plane/src/services.js';
import type { StoredClient } from '../../../../control-plane/src/storage/interface.js';
import type { DomainEvent } from '../../../../control-plane/src/events/types.js';
import { manualClock, tempDir, TEST_ISSUER, TEST_MASTER_KEY } from '../../../helpers/build.js';

const REDIRECT = 'https://notes.example.com/callback';
/** The `reason` a refused grant carries, or 'resolved' when it went through. */
const refusal = (pending: Promise<unknown>) =>
  pending.then(
    () => 'resolved',
    (error: unknown) => (error as { reason?: string }).reason,
  );
const RESOURCE = 'https://api.notes.example.com';

/** The grants are plain functions over the services: no fastify, no HTTP. */
async function setUp(tap: { teardown(fn: () => unknown): void }) {
  const clock = manualClock();
  const config = loadControlPlaneConfig({
    env: {},
    overrides: { dataDir: tempDir(tap), issuer: TEST_ISSUER, masterKey: TEST_MASTER_KEY },
  }) as ControlPlaneConfig & { issuer: string };
  const services: RunningServices = await openControlPlaneServices(config, { now: clock.now });
  tap.teardown(() => services.close());
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, event) => void events.push(event));
  const now = clock.now();
  const identityId = 'usr_grants0000000000';
  await services.storage.identities.create({
    identityId,
    username: 'ada',
    displayName: 'Ada',
    preferences: {},
    founder: false,
    createdAt: now,
    updatedAt: now,
  });
  const sessionId = 'ses_grants0000000000';
  await services.storage.sessions.insert({
    sessionId,
    tokenHash: sha256Hex('cookie'),
    identityId,
    deviceId: 'dev_1',
    assurance: 'passkey',
    amr: ['pop', 'user'],
    authTime: now,
    stepUpAt: null,
    credId: null,
    createdAt: now,
    lastSeenAt: now,
    idleExpiresAt: now + 3_600_000,
    absoluteExpiresAt: now + 86_400_000,
    revokedAt: null,
  });
  const client = {
    clientId: 'cl_grants',
    type: 'confidential',
    secretHash: null,
    secretIssuedAt: null,
    ownerId: null,
    registrationTokenHash: 'x',
    revision: 1,
    createdAt: now,
    updatedAt: now,
    metadata: {
      grant_types: ['authorization_code', 'refresh_token'],
      resources: [RESOURCE],
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'client_secret_basic',
      access: { humans: true, agents: false },
    },
  } as unknown as StoredClient;
  /** A fresh code as authorize would store it; returns the code and its verifier. */
  async function code(scope = 'openid offline_access') {
    const value = randomToken(32);
    const verifier = randomToken(32);
    await services.storage.oidc.insertCode({
      codeHash: sha256Hex(value),
      clientId: client.clientId,
      redirectUri: REDIRECT,
      identityId,
      sessionId,
      scope,
      resource: RESOURCE,
      nonce: 'n-1',
      codeChallenge: computeS256Challenge(verifier),
      dpopJkt: null,
      assurance: 'passkey',
      amr: ['pop', 'user'],
      authTime: clock.now(),
      createdAt: clock.now(),
      expiresAt: clock.now() + 60_000,
      consumedAt: null,
      grantId: null,
      offline: false,
    });
    return { code: value, verifier };
  }
  return { services, clock, client, code, identityId, sessionId, events };
}

t.test('a code exchange issues ES256 tokens, a refresh token and one receipted event', async (t) => {
  const { services, client, code, identityId, events } = await setUp(t);
  const { code: value, verifier } = await code('openid profile offline_access');
  const result = await authorizationCodeGrant(
    services,
    client,
    { code: value, redirect_uri: REDIRECT, code_verifier: verifier },
    null,
  );
  t.ok(result.refreshToken);
  t.match(result.receipt, /^[0-9a-f]{64}$/);
  t.same(result.scopes, ['openid', 'profile', 'offline_access']);
  const header = decodeProtectedHeader(result.minted.accessToken);
  t.match(header, { alg: 'ES256', typ: 'at+jwt', kid: services.keys.current().kid });
  const key = services.keys.publicKey(header.kid!)!;
  const access = await jwtVerify(result.minted.accessToken, key, {
    issuer: TEST_ISSUER,
    typ: 'at+jwt',
    currentDate: new Date(services.now()),
  });
  t.match(access.payload, {
    sub: identityId,
    client_id: client.clientId,
    aud: RESOURCE,
    scope: 'openid profile offline_access',
  });
  const id = await jwtVerify(result.minted.idToken!, key, {
    issuer: TEST_ISSUER,
    audience: client.clientId,
    typ: 'JWT',
    currentDate: new Date(services.now()),
  });
  t.match(id.payload, { sub: identityId, nonce: 'n-1', preferred_username: 'ada', name: 'Ada' });
  t.equal(typeof id.payload.iat, 'number');
  t.same(
    events.map((e) => e.type),
    ['token.issued'],
  );
});

t.test('a second use of a code is refused and revokes what the first one issued', async (t) => {
  const { services, client, code, events } = await setUp(t);
  const { code: value, verifier } = await code();
  const body = { code: value, redirect_uri: REDIRECT, code_verifier: verifier };
  const first = await authorizationCodeGrant(services, client, body, null);
  t.equal(await refusal(authorizationCodeGrant(services, client, body, null)), 'invalid_grant');
  const jti = decodeJwt(first.minted.accessToken).jti as string;
  const grant = await services.storage.oidc.getGrant(jti.split('.')[0]!);
  t.not(grant?.revokedAt, null, 'the grant of the first exchange is revoked');
  t.match(events.at(-1), { type: 'token.family_revoked', cause: 'code_replay' });
  t.equal(
    await refusal(refreshTokenGrant(services, client, { refresh_token: first.refreshToken }, null)),
    'invalid_grant',
  );
});

t.test('a wrong PKCE verifier or redirect URI is refused, and an unknown code too', async (t) => {
  const { services, client, code } = await setUp(t);
  const a = await code();
  t.equal(
    await refusal(
      authorizationCodeGrant(
        services,
        client,
        { code: a.code, redirect_uri: REDIRECT, code_verifier: randomToken(32) },
        null,
      ),
    ),
    'invalid_grant',
  );
  const b = await code();
  t.equal(
    await refusal(
      authorizationCodeGrant(
        services,
        client,
        { code: b.code, redirect_uri: `${REDIRECT}/other`, code_verifier: b.verifier },
        null,
      ),
    ),
    'invalid_grant',
  );
  t.equal(
    await refusal(
      authorizationCodeGrant(
        services,
        client,
        { code: 'nope', redirect_uri: REDIRECT, code_verifier: b.verifier },
        null,
      ),
    ),
    'invalid_grant',
  );
  t.equal(
    await refusal(
      authorizationCodeGrant(services, client, { redirect_uri: REDIRECT, code_verifier: b.verifier }, null),
    ),
    'invalid_request',
  );
});

t.test(
  'a refused exchange uses the code up: the right verifier afterwards is a replay and issues nothing',
  async (t) => {
    const { services, client, code, events } = await setUp(t);
    const { code: value, verifier } = await code();
    t.equal(
      await refusal(
        authorizationCodeGrant(
          services,
          client,
          { code: value, redirect_uri: REDIRECT, code_verifier: randomToken(32) },
          null,
        ),
      ),
      'invalid_grant',
    );
    t.not((await services.storage.oidc.findCode(sha256Hex(value)))?.consumedAt, null);
    t.equal(
      await refusal(
        authorizationCodeGrant(
          services,
          client,
          { code: value, redirect_uri: REDIRECT, code_verifier: verifier },
          null,
        ),
      ),
      'invalid_grant',
    );
    t.same(events, [], 'no grant, no receipt');
  },
);

t.test(
  'an exchange links its code to the grant it creates; of two concurrent exchanges of one code one wins and keeps its grant',
  async (t) => {
    const { services, client, code, events } = await setUp(t);
    const { code: value, verifier } = await code();
    const body = { code: value, redirect_uri: REDIRECT, code_verifier: verifier };
    const outcomes = await Promise.all([
      refusal(authorizationCodeGrant(services, client, body, null)),
      refusal(authorizationCodeGrant(services, client, body, null)),
    ]);
    t.same(outcomes.sort(), ['invalid_grant', 'resolved']);
    const stored = await services.storage.oidc.findCode(sha256Hex(value));
    t.ok(stored?.grantId, 'the spend linked the code to its grant');
    t.equal(
      (await services.storage.oidc.getGrant(stored!.grantId!))?.revokedAt,
      null,
      'the loser found the code spent only at its spend',
    );
    t.same(
      events.map((e) => e.type),
      ['token.issued'],
    );
    t.equal(await refusal(authorizationCodeGrant(services, client, body, null)), 'invalid_grant');
    t.not((await services.storage.oidc.getGrant(stored!.grantId!))?.revokedAt, null, 'a later replay revokes it');
  },
);

t.test('a refresh rotates the token; the rotated-out one coming back revokes the family', async (t) => {
  const { services, client, code, events } = await setUp(t);
  const { code: value, verifier } = await code();
  const issued = await authorizationCodeGrant(
    services,
    client,
    { code: value, redirect_uri: REDIRECT, code_verifier: verifier },
    null,
  );
  const next = await refreshTokenGrant(services, client, { refresh_token: issued.refreshToken }, null);
  t.ok(next.refreshToken);
  t.not(next.refreshToken, issued.refreshToken);
  t.ok(next.minted.idToken, 'scope openid brings an ID token');
  t.match(events.at(-1), { type: 'token.refreshed' });
  t.equal(
    await refusal(refreshTokenGrant(services, client, { refresh_token: issued.refreshToken }, null)),
    'invalid_grant',
  );
  t.match(events.at(-1), { type: 'token.family_revoked', cause: 'refresh_reuse' });
  t.equal(
    await refusal(refreshTokenGrant(services, client, { refresh_token: next.refreshToken }, null)),
    'invalid_grant',
    'the newer token went with its family',
  );
});

t.test('a FAPI 2.0 client keeps its refresh token: no rotation, its idle end moves with each use', async (t) => {
  const { services, client, code, clock, events } = await setUp(t);
  const fapi = { ...client, metadata: { ...client.metadata, fapi_profile: '2.0' } } as StoredClient;
  const { code: value, verifier } = await code();
  const issued = await authorizationCodeGrant(
    services,
    fapi,
    { code: value, redirect_uri: REDIRECT, code_verifier: verifier },
    null,
  );
  const token = issued.refreshToken!;
  const before = (await services.storage.oidc.findRefreshToken(sha256Hex(token)))!;
  clock.advance(60_000);
  const first = await refreshTokenGrant(services, fapi, { refresh_token: token }, null);
  t.equal(first.refreshToken, undefined, 'no new refresh token: the client keeps its own');
  t.ok(first.minted.accessToken);
  t.match(events.at(-1), { type: 'token.refreshed' });
  const after = (await services.storage.oidc.findRefreshToken(sha256Hex(token)))!;
  t.equal(after.usedAt, null, 'not spent');
  t.equal(after.idleExpiresAt, before.idleExpiresAt + 60_000, 'its idle end moved with the use');
  const second = await refreshTokenGrant(services, fapi, { refresh_token: token }, null);
  t.ok(second.minted.accessToken, 'the same token works again, and no family is revoked');
  t.notMatch(events.at(-1), { type: 'token.family_revoked' });
});

t.test('two concurrent refreshes with one token rotate it once', async (t) => {
  const { services, client, code } = await setUp(t);
  const { code: value, verifier } = await code();
  const issued = await authorizationCodeGrant(
    services,
    client,
    { code: value, redirect_uri: REDIRECT, code_verifier: verifier },
    null,
  );
  const results = await Promise.allSettled([
    refreshTokenGrant(services, client, { refresh_token: issued.refreshToken }, null),
    refreshTokenGrant(services, client, { refresh_token: issued.refreshToken }, null),
  ]);
  t.same(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
});

t.test('a refresh asking for a scope the grant lacks is refused and leaves the token working', async (t) => {
  const { services, client, code } = await setUp(t);
  const { code: value, verifier } = await code();
  const issued = await authorizationCodeGrant(
    services,
    client,
    { code: value, redirect_uri: REDIRECT, code_verifier: verifier },
    null,
  );
  t.equal(
    await refusal(
      refreshTokenGrant(services, client, { refresh_token: issued.refreshToken, scope: 'openid admin' }, null),
    ),
    'invalid_scope',
  );
  const next = await refreshTokenGrant(
    services,
    client,
    { refresh_token: issued.refreshToken, scope: 'offline_access' },
    null,
  );
  t.same(next.scopes, ['offline_access']);
  t.equal(next.minted.idToken, undefined, 'no openid, no ID token');
});

t.test('a refresh token of another client, or after the sign-in ended, is refused', async (t) => {
  const { services, client, code, identityId, sessionId, clock } = await setUp(t);
  const { code: value, verifier } = await code();
  const issued = await authorizationCodeGrant(
    services,
    client,
    { code: value, redirect_uri: REDIRECT, code_verifier: verifier },
    null,
  );
  const other = { ...client, clientId: 'cl_other' } as StoredClient;
  t.equal(
    await refusal(refreshTokenGrant(services, other, { refresh_token: issued.refreshToken }, null)),
    'invalid_grant',
  );
  await services.storage.sessions.revoke(identityId, sessionId, clock.now());
  t.equal(
    await refusal(refreshTokenGrant(services, client, { refresh_token: issued.refreshToken }, null)),
    'invalid_grant',
  );
});
