import t, { type Test } from 'tap';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import * as client from 'openid-client';
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';
import { until } from '../../helpers/until.js';
import { createMigratedTestDatabase, postgresAvailability } from '../../helpers/postgres.js';
import {
  ADMIN,
  CALLBACK,
  browse,
  configure,
  passkeySignUp,
  refusal,
  register,
  start,
  type CookieJar,
} from '../../helpers/openid-client.js';

/**
 * The Shared Signals transmitter from a receiver's side (docs/events.md#shared-signals-streams-from-a-receivers-view):
 * an operator-owned receiver gets its token with openid-client's client_credentials grant, creates a push stream
 * (to a real https receiver) and a poll stream, and every SET is verified with jose against the JWKS. An account
 * with a grant to the receiver is heard of; one without never is, and adding it answers like adding a known one.
 * Run on SQLite and, when it is there, PostgreSQL.
 */
const PUSH = 'urn:ietf:rfc:8935';
const POLL = 'urn:ietf:rfc:8936';
const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/';
const RISC = 'https://schemas.openid.net/secevent/risc/event-type/';
const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';
const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };

async function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: init.headers ?? {},
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? (JSON.parse(text) as any) : null, headers: res.headers };
}

async function signIn(base: string, config: client.Configuration, jar: CookieJar): Promise<string> {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 's',
  });
  const tokens = await client.authorizationCodeGrant(config, await browse(url, jar, base), {
    pkceCodeVerifier: verifier,
    expectedState: 's',
  });
  return tokens.claims()!.sub;
}

async function scenario(t: Test, extra: Record<string, unknown>) {
  const tls = makeTestCa(t);
  const pushed: Array<{ type: string | undefined; auth: string | undefined; body: string }> = [];
  const rx = await startHttpsServer(t, tls, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      pushed.push({ type: req.headers['content-type'], auth: req.headers.authorization, body });
      res.statusCode = 202;
      res.end();
    });
  });
  const server = await start(t, { 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile, ...extra });
  const base = server.url;

  // The transmitter's metadata.
  const metadata = await call(`${base}/.well-known/ssf-configuration`);
  t.match(metadata, {
    status: 200,
    body: {
      spec_version: '1_0',
      issuer: base,
      jwks_uri: `${base}/.well-known/jwks.json`,
      delivery_methods_supported: [PUSH, POLL],
      configuration_endpoint: `${base}/ssf/streams`,
      add_subject_endpoint: `${base}/ssf/streams/subjects:add`,
      authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
    },
  });
  const conf = metadata.body as Record<string, string>;
  const jwks = createRemoteJWKSet(new URL(conf.jwks_uri!));

  // The receiver: operator-owned, ssf.* registered by name; its token from openid-client.
  const receiver = await register(base, {
    client_name: 'Receiver',
    grant_types: ['client_credentials', 'authorization_code'],
    scope: 'openid ssf.manage ssf.read',
    resources: [],
  });
  const config = await configure(base, receiver);
  const issued = await client.clientCredentialsGrant(config, { scope: 'ssf.manage ssf.read openid' });
  t.match(decodeJwt(issued.access_token), {
    aud: `${base}/ssf`,
    scope: 'ssf.manage ssf.read',
    sub: receiver.client_id,
  });
  const bearer = { authorization: `Bearer ${issued.access_token}`, 'content-type': 'application/json' };

  t.test('ssf.* goes only to operator- or org-owned clients that registered it by name', async (t) => {
    const unnamed = await register(base, {
      client_name: 'No ssf',
      grant_types: ['client_credentials'],
      scope: 'openid',
      resources: [],
    });
    const unnamedConfig = await configure(base, unnamed);
    t.equal(await refusal(client.clientCredentialsGrant(unnamedConfig, { scope: 'ssf.manage' })), 'invalid_scope');
    // A person's own client, registered with a session, never receives signals about others.
    const person = await passkeySignUp(base, `ssf-owner-${Math.random().toString(36).slice(2, 8)}`);
    const res = await fetch(`${base}/register`, {
      method: 'POST',
      headers: { cookie: person.header(), origin: base, 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Mine',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        post_logout_redirect_uris: [],
        scope: 'openid ssf.manage',
        resources: [],
      }),
    });
    t.equal(res.status, 201);
    const own = (await res.json()) as Record<string, string>;
    const ownConfig = await configure(base, own);
    t.equal(await refusal(client.clientCredentialsGrant(ownConfig, { scope: 'ssf.manage' })), 'invalid_scope');
  });

  t.test('stream management refuses what it must, with the envelope', async (t) => {
    const anonymous = await call(conf.configuration_endpoint!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: { delivery: { method: POLL } },
    });
    t.match(anonymous, { status: 401, body: { ok: false, reason: 'unauthorized' } });
    t.match(anonymous.headers.get('www-authenticate'), /^Bearer/);
    const forged = await call(conf.configuration_endpoint!, { headers: { authorization: 'Bearer x.y.z' } });
    t.match(forged, { status: 401, body: { reason: 'invalid_token' } });
    const bad = await call(conf.configuration_endpoint!, {
      method: 'POST',
      headers: bearer,
      body: { delivery: { method: 'urn:example:carrier-pigeon' } },
    });
    t.match(bad, { status: 400, body: { ok: false, reason: 'invalid_request' } });
    const http = await call(conf.configuration_endpoint!, {
      method: 'POST',
      headers: bearer,
      body: { delivery: { method: PUSH, endpoint_url: 'http://example.com/x' } },
    });
    t.match(http, { status: 400, body: { ok: false, reason: 'fetch_not_https' } });
    const unknown = await call(`${conf.status_endpoint}?stream_id=sst_nope`, { headers: bearer });
    t.match(unknown, { status: 404, body: { ok: false, reason: 'not_found' } });
    const badPoll = await call(`${base}/ssf/poll/sst_nope`, { method: 'POST', headers: bearer, body: {} });
    t.match(badPoll, { status: 404, body: { reason: 'not_found' } });
  });

  // A push stream (with an Authorization value for the receiver) and a poll stream.
  const created = await call(conf.configuration_endpoint!, {
    method: 'POST',
    headers: bearer,
    body: {
      delivery: { method: PUSH, endpoint_url: `${rx.origin}/ssf/push`, authorization_header: 'Bearer rx-secret' },
      events_requested: [`${CAEP}session-revoked`, `${RISC}account-disabled`, `${CAEP}credential-change`],
      description: 'push',
    },
  });
  t.match(created, {
    status: 201,
    body: {
      iss: base,
      aud: receiver.client_id,
      delivery: { method: PUSH, endpoint_url: `${rx.origin}/ssf/push` },
      events_delivered: [`${CAEP}session-revoked`, `${RISC}account-disabled`, `${CAEP}credential-change`],
    },
  });
  t.notOk(created.text.includes('rx-secret'), 'the Authorization value is never read back');
  const push = created.body as { stream_id: string };
  const polled = await call(conf.configuration_endpoint!, {
    method: 'POST',
    headers: bearer,
    body: { delivery: { method: POLL }, events_requested: [`${CAEP}session-revoked`, `${RISC}account-disabled`] },
  });
  t.match(polled, { status: 201, body: { delivery: { method: POLL, endpoint_url: /\/ssf\/poll\/sst_/ } } });
  const poll = polled.body as { stream_id: string; delivery: { endpoint_url: string } };
  const listed = await call(conf.configuration_endpoint!, { headers: bearer });
  t.same(
    (listed.body as Array<{ stream_id: string }>).map((s) => s.stream_id),
    [push.stream_id, poll.stream_id],
  );
  t.test("a read-only token reads but changes nothing; another receiver's stream does not exist for it", async (t) => {
    const reader = await client.clientCredentialsGrant(config, { scope: 'ssf.read' });
    const read = { authorization: `Bearer ${reader.access_token}`, 'content-type': 'application/json' };
    t.equal((await call(`${conf.configuration_endpoint}?stream_id=${push.stream_id}`, { headers: read })).status, 200);
    const change = await call(conf.configuration_endpoint!, {
      method: 'POST',
      headers: read,
      body: { delivery: { method: POLL } },
    });
    t.match(change, { status: 403, body: { reason: 'insufficient_scope' } });
    const other = await register(base, {
      client_name: 'Other receiver',
      grant_types: ['client_credentials'],
      scope: 'openid ssf.manage',
      resources: [],
    });
    const otherConfig = await configure(base, other);
    const otherToken = (await client.clientCredentialsGrant(otherConfig, { scope: 'ssf.manage' })).access_token;
    const theirs = await call(`${conf.configuration_endpoint}?stream_id=${push.stream_id}`, {
      headers: { authorization: `Bearer ${otherToken}` },
    });
    t.match(theirs, { status: 404, body: { reason: 'not_found' } });
    t.same((await call(conf.configuration_endpoint!, { headers: { authorization: `Bearer ${otherToken}` } })).body, []);
  });
  t.match(await call(`${conf.status_endpoint}?stream_id=${push.stream_id}`, { headers: bearer }), {
    status: 200,
    body: { stream_id: push.stream_id, status: 'enabled' },
  });
  const patched = await call(conf.configuration_endpoint!, {
    method: 'PATCH',
    headers: bearer,
    body: { stream_id: poll.stream_id, description: 'poll' },
  });
  t.match(patched, { status: 200, body: { description: 'poll', events_requested: [`${CAEP}session-revoked`] } });

  const verify = async (jwt: string): Promise<JWTPayload> => {
    const { payload, protectedHeader } = await jwtVerify(jwt, jwks, {
      issuer: base,
      audience: receiver.client_id,
      typ: 'secevent+jwt',
      algorithms: ['ES256'],
    });
    t.equal(protectedHeader.typ, 'secevent+jwt');
    t.equal(payload.sub, undefined, 'no sub');
    t.equal(payload.exp, undefined, 'no exp');
    t.type(payload.jti, 'string');
    return payload;
  };
  const pushedOf = async (type: string, count = 1) =>
    until(`${count} pushed ${type}`, async () => {
      const found: JWTPayload[] = [];
      for (const p of pushed) {
        const payload = decodeJwt(p.body);
        if (Object.keys(payload.events as object).includes(type)) found.push(payload);
      }
      return found.length >= count ? found : undefined;
    });

  // Verification: the SET echoes state, its subject the stream.
  t.equal(
    (
      await call(conf.verification_endpoint!, {
        method: 'POST',
        headers: bearer,
        body: { stream_id: push.stream_id, state: 'st-1' },
      })
    ).status,
    204,
  );
  await pushedOf(VERIFICATION);
  const verification = pushed.find(
    (p) => decodeJwt(p.body).events && VERIFICATION in (decodeJwt(p.body).events as object),
  )!;
  t.equal(verification.type, 'application/secevent+jwt');
  t.equal(verification.auth, 'Bearer rx-secret');
  t.match(await verify(verification.body), {
    sub_id: { format: 'opaque', id: push.stream_id },
    events: { [VERIFICATION]: { state: 'st-1' } },
  });

  // An account with a grant to the receiver, and one without.
  const user = await passkeySignUp(base, `ssf-user-${Math.random().toString(36).slice(2, 8)}`);
  const sub = await signIn(base, config, user);
  const strangerJar = await passkeySignUp(base, `ssf-stranger-${Math.random().toString(36).slice(2, 8)}`);
  const strangerId = (
    (await call(`${base}/account?format=json`, { headers: { cookie: strangerJar.header() } })).body as any
  )?.identityId as string;
  t.match(strangerId, /^usr_/);
  const add = (streamId: string, subject: Record<string, unknown>) =>
    call(conf.add_subject_endpoint!, {
      method: 'POST',
      headers: bearer,
      body: { stream_id: streamId, subject, verified: true },
    });
  const answers = [];
  for (const streamId of [push.stream_id, poll.stream_id])
    for (const s of [sub, strangerId, 'usr_neverexisted'])
      answers.push(await add(streamId, { format: 'iss_sub', iss: base, sub: s }));
  t.same(
    new Set(answers.map((a) => `${a.status} ${a.text}`)),
    new Set(['200 ']),
    'known, granted-nothing and unknown accounts are all answered alike',
  );
  t.match(await add(push.stream_id, { nonsense: true }), { status: 400, body: { reason: 'invalid_request' } });

  // Both accounts add a passkey (the stranger first), lose their sessions and are disabled: only the granted one is heard of.
  const addPasskey = async (jar: CookieJar) => {
    const post = async (path: string, body: unknown) =>
      (
        await call(`${base}${path}`, {
          method: 'POST',
          headers: { cookie: jar.header(), origin: base, 'content-type': 'application/json' },
          body,
        })
      ).body as Record<string, any>;
    const begun = await post('/auth/passkeys/add-options', {});
    const added = await post('/auth/passkeys/add-verify', {
      response: new SoftAuthenticator(base).create(begun.options),
    });
    t.equal(added.ok, true);
  };
  await addPasskey(strangerJar);
  await addPasskey(user);
  const [changed] = await pushedOf(`${CAEP}credential-change`);
  t.match(changed, {
    sub_id: { format: 'iss_sub', iss: base, sub },
    events: { [`${CAEP}credential-change`]: { credential_type: 'fido2-platform', change_type: 'create' } },
  });
  for (const id of [strangerId, sub]) {
    t.equal(
      (await call(`${base}/admin/accounts/${id}/sessions/revoke`, { method: 'POST', headers: admin, body: {} })).status,
      200,
    );
    t.equal(
      (await call(`${base}/admin/accounts/${id}/disable`, { method: 'POST', headers: admin, body: {} })).status,
      200,
    );
  }
  const [revoked] = await pushedOf(`${CAEP}session-revoked`);
  const [disabled] = await pushedOf(`${RISC}account-disabled`);
  t.match(revoked, { sub_id: { format: 'iss_sub', iss: base, sub } });
  t.match(disabled, { sub_id: { format: 'iss_sub', iss: base, sub } });
  for (const p of pushed) await verify(p.body);
  t.notOk(
    pushed.some((p) => p.body.length > 0 && JSON.stringify(decodeJwt(p.body)).includes(strangerId)),
    'nothing about the account without a grant',
  );

  // The poll stream holds the same events, until acknowledged.
  const first = await call(poll.delivery.endpoint_url, {
    method: 'POST',
    headers: bearer,
    body: { maxEvents: 10, returnImmediately: true },
  });
  t.equal(first.status, 200);
  t.equal(first.body.moreAvailable, false);
  const sets = first.body.sets as Record<string, string>;
  const types = [];
  for (const [jti, jwt] of Object.entries(sets)) {
    const payload = await verify(jwt);
    t.equal(payload.jti, jti);
    t.match(payload, { sub_id: { format: 'iss_sub', sub } });
    types.push(...Object.keys(payload.events as object));
  }
  t.same(types.sort(), [`${CAEP}session-revoked`, `${RISC}account-disabled`].sort());
  const acked = await call(poll.delivery.endpoint_url, {
    method: 'POST',
    headers: bearer,
    body: { ack: Object.keys(sets), returnImmediately: true },
  });
  t.same(acked.body, { sets: {}, moreAvailable: false });
  t.match(await call(poll.delivery.endpoint_url, { method: 'POST', headers: bearer, body: { maxEvents: 'all' } }), {
    status: 400,
    body: { reason: 'invalid_request' },
  });

  // The account's deletion is told (account-purged), and it is then a subject of nothing.
  const purged = `${RISC}account-purged`;
  const widened = await call(conf.configuration_endpoint!, {
    method: 'PATCH',
    headers: bearer,
    body: { stream_id: push.stream_id, events_requested: [`${RISC}account-disabled`, purged] },
  });
  t.match(widened, { status: 200, body: { events_delivered: [`${RISC}account-disabled`, purged] } });
  t.equal(
    (await call(`${base}/admin/accounts/${sub}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } }))
      .status,
    200,
  );
  const [gone] = await pushedOf(purged);
  t.match(gone, { sub_id: { format: 'iss_sub', iss: base, sub } });

  // Deleting a stream: gone for its receiver.
  t.equal(
    (await call(`${conf.configuration_endpoint}?stream_id=${push.stream_id}`, { method: 'DELETE', headers: bearer }))
      .status,
    204,
  );
  t.equal((await call(`${conf.configuration_endpoint}?stream_id=${push.stream_id}`, { headers: bearer })).status, 404);
}

t.test('sqlite', (t) => scenario(t, {}));

const postgres = await postgresAvailability();
t.test('postgres', { skip: postgres.run ? false : postgres.reason }, async (t) =>
  scenario(t, { databaseUrl: await createMigratedTestDatabase(t) }),
);
