import t from 'tap';
import { exportJWK, generateKeyPair } from 'jose';
import { readFileSync, readdirSync } from 'node:fs';
import { ensureOperatorClient } from '../../../../control-plane/src/clients/operator-client.js';
import { approveAuthorization, authorize } from '../../../../control-plane/src/oidc/authorize/authorize.js';
import type { AuthorizeBrowser } from '../../../../control-plane/src/oidc/authorize/request.js';
import { openServices, TEST_ISSUER } from '../../../helpers/build.js';
import { pkcePair, REDIRECT } from '../../../helpers/oidc.js';
import { rejectionReason } from '../../../helpers/reason-of.js';

/**
 * Authorize as an operation, without HTTP: every refusal is thrown by a step and answered in one
 * place, at the redirect URI once it is verified, on a page (thrown on) before.
 */

const signedOut: AuthorizeBrowser = { session: undefined, adoptUiLocales: () => undefined };

async function setUp(tap: Parameters<typeof openServices>[0]) {
  const { services } = await openServices(tap);
  const { clientId } = await ensureOperatorClient(services, {
    stateFile: 'authorize-test-client',
    label: 'test client',
    metadata: { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
  });
  const request = (extra: Record<string, string> = {}) => ({
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    state: 'st-1',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
  return { services, clientId, request };
}

t.test('an unknown client or an unregistered redirect URI is refused on a page, never redirected', async (t) => {
  const { services, request } = await setUp(t);
  const unknown = authorize(services, signedOut, request({ client_id: 'cl_nobody' }));
  t.equal(await rejectionReason(unknown), 'unknown_client');
  const elsewhere = authorize(services, signedOut, request({ redirect_uri: 'https://evil.example/cb', scope: 'x y' }));
  t.equal(await rejectionReason(elsewhere), 'unknown_client');
});

t.test('once the redirect URI is verified, a refusal goes to it with state and iss', async (t) => {
  const { services, request } = await setUp(t);
  const outcome = await authorize(services, signedOut, request({ code_challenge_method: 'plain' }));
  t.equal(outcome.kind, 'respond');
  if (outcome.kind !== 'respond') return;
  t.same(outcome.target, { redirectUri: REDIRECT, responseMode: 'query', state: 'st-1' });
  t.match(outcome.params, { error: 'invalid_request', state: 'st-1', iss: TEST_ISSUER });
  t.equal(outcome.refused, 'invalid_request');

  const silent = await authorize(services, signedOut, request({ prompt: 'none' }));
  t.match(silent, { kind: 'respond', params: { error: 'login_required', iss: TEST_ISSUER } });
});

t.test('an unregistered request_uri is request_uri_not_supported at the redirect URI', async (t) => {
  const { services, request } = await setUp(t);
  const outcome = await authorize(services, signedOut, request({ request_uri: 'https://rp.example/request.jwt' }));
  t.match(outcome, { kind: 'respond', params: { error: 'request_uri_not_supported', state: 'st-1' } });
});

t.test('a FAPI 2.0 client must push its requests: a plain one is refused at its redirect URI', async (t) => {
  const { services, request } = await setUp(t);
  const { publicKey } = await generateKeyPair('ES256');
  const { clientId } = await ensureOperatorClient(services, {
    stateFile: 'authorize-test-fapi',
    label: 'fapi client',
    metadata: {
      redirect_uris: ['https://bank.example.com/cb'],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] },
      fapi_profile: '2.0',
    },
  });
  const client = (await services.storage.clients.get(clientId))!;
  t.equal(client.metadata.require_pushed_authorization_requests, true, 'registration turned the push on');
  const plain = request({ client_id: clientId, redirect_uri: 'https://bank.example.com/cb' });
  t.match(await authorize(services, signedOut, plain), {
    kind: 'respond',
    params: { error: 'invalid_request', error_description: /push/ },
  });
  // Even a stored registration without the flag (written before the profile forced it) must push.
  const { require_pushed_authorization_requests: _flag, ...withoutFlag } = client.metadata;
  await services.storage.clients.update(clientId, client.revision, {
    type: client.type,
    metadata: withoutFlag,
    secretHash: client.secretHash,
    secretIssuedAt: client.secretIssuedAt,
    at: services.now(),
  });
  t.match(await authorize(services, signedOut, plain), { kind: 'respond', params: { error: 'invalid_request' } });
});

t.test('without a session the request is parked for the sign-in page, which resumes it', async (t) => {
  const { services, request } = await setUp(t);
  const outcome = await authorize(services, signedOut, request());
  t.equal(outcome.kind, 'redirect');
  if (outcome.kind !== 'redirect') return;
  const resume = new URL(outcome.location, TEST_ISSUER).searchParams.get('return')!;
  t.match(resume, /^\/auth\/authorize\?resume=[A-Za-z0-9_-]{32}$/);
  const id = new URL(resume, TEST_ISSUER).searchParams.get('resume')!;
  const again = await authorize(services, signedOut, { resume: id });
  t.equal(again.kind, 'redirect', 'the parked request resumes (still signed out: to the sign-in page again)');
  t.equal(await rejectionReason(authorize(services, signedOut, { resume: 'x'.repeat(32) })), 'invalid_request');
});

t.test('an approval without its token is refused on a page, never turned into a code', async (t) => {
  const { services, request } = await setUp(t);
  const pending = approveAuthorization(services, signedOut, { ...request(), approval: 'y'.repeat(32) });
  t.equal(await rejectionReason(pending), 'access_denied');
});

t.test('the route only sends what the operation decided', async (t) => {
  const route = readFileSync('control-plane/src/routes/oidc/authorize.ts', 'utf8');
  t.ok(route.split('\n').length < 150, 'under 150 lines');
  t.notMatch(route, /\bstate\.|respondError|\bcatch\b|\bfail\(|storage/, 'no shared state, no refusal of its own');
  // node-oidc-provider's actions/authorization/: one check per file, none long.
  for (const file of readdirSync('control-plane/src/oidc/authorize')) {
    const lines = readFileSync(`control-plane/src/oidc/authorize/${file}`, 'utf8').split('\n').length;
    t.ok(lines < 180, `${file} is a small step (${lines} lines)`);
  }
});
