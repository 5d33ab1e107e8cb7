import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkUsername } from '../../../../lib/accounts/username.js';
import { fail } from '../../../../lib/errors/keyplane-error.js';
import { checkAuthorizationRequest, type AuthorizationRequest } from '../../../../lib/oauth/authorization-request.js';
import { buildCorsHeaders, buildPopupUrl, decideInPlaceConsent, isRegisteredOrigin } from '../../../../lib/oauth/in-place.js';
import { originsOf } from '../../../../lib/oauth/redirect-uri.js';
import { formatScope } from '../../../../lib/oauth/scope.js';
import { constantEquals } from '../../../../lib/util/constant-equals.js';
import { randomId, randomToken } from '../../../../lib/util/random.js';
import { sha256Hex } from '../../../../lib/util/sha256.js';
import type { StoredClient } from '../../storage/types.js';
import {
  CredentialLimits, creationOptions, readAssertion, readRegistration, requestOptions, takeChallenge, verifyAssertion, verifyRegistration,
} from '../passkeys/ceremony.js';
import { PASSKEY_AMR, credentialRecord } from '../passkeys/index.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';

export const DIRECT_PATH = '/auth/authorize/direct';
export const DIRECT_OPTIONS_PATH = '/auth/authorize/direct/options';

/** A sign-up started on the relying party's page, kept under its challenge until the registration comes back. */
interface DirectSignup {
  signupTokenHash: string;
  identityId: string;
  username: string;
  clientId: string;
  origin: string;
}

const signupKey = (challenge: string) => `direct:signup:${sha256Hex(challenge)}`;
const PREFLIGHT = { methods: 'POST', headers: 'Content-Type' };

const directBody = {
  type: 'object',
  required: ['client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state'],
  properties: {
    client_id: { type: 'string' }, redirect_uri: { type: 'string', description: 'exact registered callback the code is bound to' },
    code_challenge: { type: 'string' }, code_challenge_method: { const: 'S256' }, state: { type: 'string' }, nonce: { type: 'string' },
    scope: { type: 'string', description: 'default openid' }, resource: { type: 'string' },
    assertion: { type: 'object', required: ['response'], properties: { user: {}, response: { type: 'object' } } },
    registration: { type: 'object', required: ['user', 'response'], properties: { user: { type: 'string' }, response: { type: 'object' }, signupToken: { type: 'string' } } },
  },
} as const;

/**
 * The direct grant (docs/in-place.md#direct-grant): a passkey ceremony on the relying party's own
 * page (WebAuthn related origins, `/.well-known/webauthn`), answered with a one-time
 * authorization code bound to the client, the redirect URI and the PKCE challenge, exchanged at
 * `/auth/token` like any other. CORS-scoped to the client's registered origins and throttled
 * like every credential path. No cookie is set: the issuer's cookie never reaches the relying
 * party's page.
 */
export default async function directGrantRoutes(app: FastifyInstance): Promise<void> {
  const { storage, state, config, events } = app.kp;
  const limits = new CredentialLimits(app);

  /** The client named in the body, with the one origin rule and its CORS answer. */
  async function clientForOrigin(request: FastifyRequest, reply: FastifyReply, clientId: string): Promise<{ client: StoredClient; origin: string }> {
    const client = clientId.length <= 100 ? await storage.clients.get(clientId) : null;
    const origin = request.headers.origin;
    const allowed = client !== null && isRegisteredOrigin(client.metadata, origin);
    reply.headers(buildCorsHeaders(origin, allowed));
    if (!client) throw fail('not_found', 'no such client');
    if (!allowed) throw fail('origin_mismatch', origin ? 'this origin is not registered for the client' : 'the request carries no Origin');
    if (client.metadata.in_place !== true) throw fail('in_place_disabled', 'the client has not turned in-place sign-in on');
    return { client, origin: origin! };
  }

  // CORS preflight (the body is JSON): the client is not known yet, so any registered origin of
  // an in-place client passes; the request itself is then checked against its client.
  for (const path of [DIRECT_PATH, DIRECT_OPTIONS_PATH]) {
    app.options(path, { config: { checksOwnOrigin: true }, schema: { tags: ['oidc'], summary: `CORS preflight for ${path} (registered in-place origins only)`, hide: true } }, async (request, reply) => {
      const origin = request.headers.origin;
      const allowed = origin !== undefined && originsOf(await storage.clients.inPlaceRedirectUris()).includes(origin);
      return reply.code(204).headers(buildCorsHeaders(origin, allowed, PREFLIGHT)).send();
    });
  }

  app.post(DIRECT_OPTIONS_PATH, {
    config: { checksOwnOrigin: true },
    schema: {
      tags: ['oidc'],
      summary: 'Direct grant, step 1: WebAuthn options for a passkey ceremony on the relying party\'s origin',
      description: 'Sign-in: `{ok, options}` (usernameless, or limited to `username`\'s passkeys). Sign-up (`signup: true` with `username`, first-party clients only): `{ok, options, signupToken}`. CORS-scoped to the client\'s registered origins.',
      body: { type: 'object', required: ['client_id'], properties: { client_id: { type: 'string' }, username: { type: 'string' }, signup: { type: 'boolean' } } },
      response: { 200: okObject({ options: { type: 'object', additionalProperties: true }, signupToken: { type: 'string' } }, ['options']), ...errorResponses },
    },
  }, async (request, reply) => {
    const body = request.body as { client_id: string; username?: string; signup?: boolean };
    const { client, origin } = await clientForOrigin(request, reply, body.client_id);
    await limits.perIp(request, 'direct-options');
    if (body.signup === true) {
      if (body.username === undefined) throw fail('invalid_request', 'a sign-up needs a username');
      const username = checkUsername(body.username);
      await limits.perAccount('signup', username);
      if (!config.signup.selfService) throw fail('signup_closed', 'sign-up is closed on this server; ask its operator');
      // A new account has approved nothing, so only a first-party client may create it in place.
      if (client.metadata.first_party !== true) throw fail('consent_required', 'sign up in the popup: this app is not first-party', { status: 403 });
      if (await storage.identities.findByUsername(username)) throw fail('username_taken', 'that username is taken');
      const identityId = randomId('usr');
      const options = await creationOptions(app, { identityId, username, displayName: '' }, []);
      const signupToken = randomToken(32);
      const pending: DirectSignup = { signupTokenHash: sha256Hex(signupToken), identityId, username, clientId: client.clientId, origin };
      if (!(await state.setIfAbsent(signupKey(options.challenge), JSON.stringify(pending), config.lifetimes.challenge * 1000))) throw fail('internal', 'challenge collision');
      return { ok: true, options, signupToken };
    }
    const ceremony = { purpose: 'direct' as const, clientId: client.clientId, origin };
    if (body.username === undefined || body.username === '') return { ok: true, options: await requestOptions(app, null, ceremony) };
    const username = checkUsername(body.username);
    await limits.perAccount('direct-options', username);
    const identity = await storage.identities.findByUsername(username);
    // As on the sign-in page: an unknown name gets options too, so names cannot be probed here.
    const allow = identity ? await storage.credentials.listByIdentity(identity.identityId) : [];
    return { ok: true, options: await requestOptions(app, allow, { ...ceremony, identityId: identity?.identityId ?? randomId('usr') }) };
  });

  /** The authorization request part of the body, checked like /auth/authorize (exact redirect URI, PKCE S256, scopes). */
  function checkRequest(client: StoredClient, body: Record<string, unknown>): AuthorizationRequest {
    const params: Record<string, unknown> = { response_type: 'code', scope: 'openid' };
    for (const name of ['client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state', 'nonce', 'scope', 'resource']) {
      if (body[name] !== undefined) params[name] = body[name];
    }
    const check = checkAuthorizationRequest(params, {
      clientId: client.clientId, redirectUris: client.metadata.redirect_uris, scope: client.metadata.scope, grantTypes: client.metadata.grant_types,
      resources: client.metadata.resources, allowsHumans: client.metadata.access.humans,
    });
    if (check.ok) return check.request;
    if (check.target === null) throw fail('invalid_redirect_uri', 'redirect_uri is not registered for this client (it must match exactly)');
    throw fail(check.error === 'invalid_scope' || check.error === 'invalid_target' ? check.error : 'invalid_request', check.description);
  }

  /** One ceremony on `origin`: an assertion signs in, a registration creates the account. Returns who signed in. */
  async function runCeremony(client: StoredClient, origin: string, body: Record<string, unknown>): Promise<{ identityId: string; created: boolean }> {
    const assertion = body.assertion as { user?: unknown; response: unknown } | undefined;
    const registration = body.registration as { user: string; response: unknown; signupToken?: string } | undefined;
    if ((assertion === undefined) === (registration === undefined)) throw fail('invalid_request', 'send exactly one of assertion and registration');
    if (assertion) {
      const { id, clientData, fields, userHandle } = readAssertion(assertion.response);
      const ceremony = await takeChallenge(app, clientData, 'direct');
      if (ceremony.clientId !== client.clientId || ceremony.origin !== origin) throw fail('challenge_mismatch', 'the ceremony was started for another client or origin');
      const credential = await storage.credentials.get(id);
      if (!credential) throw fail('unknown_credential', 'this passkey is not registered here');
      if (ceremony.identityId && ceremony.identityId !== credential.identityId) throw fail('unknown_credential', 'this passkey does not belong to that account');
      if (assertion.user !== undefined && assertion.user !== null && assertion.user !== '') {
        const identity = await storage.identities.findByUsername(checkUsername(assertion.user));
        if (!identity || identity.identityId !== credential.identityId) throw fail('unknown_credential', 'this passkey does not belong to that account');
      }
      if (userHandle !== undefined && userHandle !== credential.identityId) throw fail('unknown_credential', 'this passkey does not belong to that account');
      await limits.perAccount('signin', credential.identityId);
      // The response must have been made on this very origin (WebAuthn L3 §7.2 step 9).
      const use = await verifyAssertion(app, assertion.response, clientData, fields, credential, [origin]);
      await storage.credentials.recordUse(credential.credId, { ...use, at: app.kp.now() });
      return { identityId: credential.identityId, created: false };
    }
    const { clientData, fields } = readRegistration(registration!.response);
    const raw = await state.take(signupKey(clientData.challenge));
    if (raw === null) throw fail('challenge_unknown', 'this sign-up expired or was finished already; start again');
    const pending = JSON.parse(raw) as DirectSignup;
    if (pending.clientId !== client.clientId || pending.origin !== origin) throw fail('challenge_mismatch', 'the sign-up was started for another client or origin');
    if (registration!.signupToken !== undefined && !constantEquals(sha256Hex(registration!.signupToken), pending.signupTokenHash)) throw fail('challenge_mismatch', 'the signup token belongs to another sign-up');
    if (checkUsername(registration!.user) !== pending.username) throw fail('challenge_mismatch', 'the sign-up was started for another username');
    await limits.perAccount('signup', pending.username);
    const verified = await verifyRegistration(app, registration!.response, clientData, fields, clientData.challenge, [origin]);
    const now = app.kp.now();
    await storage.transaction(async (tx) => {
      const created = await tx.identities.create({ identityId: pending.identityId, username: pending.username, displayName: '', preferences: {}, founder: false, createdAt: now, updatedAt: now });
      if (!created) throw fail('username_taken', 'that username was taken in the meantime');
      if (!(await tx.credentials.insert(credentialRecord(pending.identityId, verified, 'Passkey 1', now)))) throw fail('credential_exists', 'this passkey is registered already');
      await events.record(tx, { type: 'account.created', at: now, outcome: 'success', identityId: pending.identityId, founder: false, credId: verified.credId });
    });
    return { identityId: pending.identityId, created: true };
  }

  app.post(DIRECT_PATH, {
    config: { checksOwnOrigin: true },
    schema: {
      tags: ['oidc'],
      summary: 'Direct grant, step 2: the passkey response from the relying party\'s page, answered with a one-time authorization code',
      description: 'CORS-scoped to the client\'s registered origins; auth-throttled. The code is bound to the client, `redirect_uri` and the PKCE challenge and is exchanged at /auth/token. TOTP active: 403 `step_up_required` with `popup`. No prior approval and not first-party: 403 `consent_required` with `popup`.',
      body: directBody,
      response: {
        200: okObject({ code: { type: 'string' }, state: { type: 'string' }, iss: { type: 'string' }, receipt: receiptField }, ['code', 'state', 'iss']),
        ...errorResponses,
      },
    },
  }, async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    const { client, origin } = await clientForOrigin(request, reply, body.client_id as string);
    await limits.perIp(request, 'direct');
    const authz = checkRequest(client, body);
    const popup = buildPopupUrl(config.issuer, {
      clientId: client.clientId, redirectUri: authz.redirectUri, codeChallenge: authz.codeChallenge, scope: formatScope(authz.scopes),
      ...(authz.state !== undefined ? { state: authz.state } : {}), ...(authz.nonce !== undefined ? { nonce: authz.nonce } : {}),
    });
    const { identityId } = await runCeremony(client, origin, body);
    // The direct grant cannot ask for a TOTP code: the popup can (spec, Errors 6).
    const totp = await storage.totp.get(identityId);
    if (totp?.state === 'active') throw fail('step_up_required', 'this account also needs its TOTP code: sign in through the popup', { fields: { popup } });
    const approval = await storage.oidc.approval(identityId, client.clientId);
    // A resource must have been approved too (the one-tap page approves scopes and resource together).
    const resourceApproved = authz.resource === undefined || (approval?.resources.includes(authz.resource) ?? false);
    const consent = decideInPlaceConsent({
      transport: 'direct', requestedScopes: authz.scopes, approvedScopes: resourceApproved ? (approval?.scopes ?? null) : null, firstParty: client.metadata.first_party === true,
    });
    if (!consent.allowed) throw fail('consent_required', 'approve this app once in the popup', { status: 403, fields: { popup } });

    const now = app.kp.now();
    const code = randomToken(32);
    const receipt = await storage.transaction(async (tx) => {
      // The grant's own session at the issuer, with no cookie anywhere: it shows on the account
      // page, can be revoked there, and ends the grant like any other session would.
      const sessionId = randomId('ses');
      const deviceId = randomId('dev');
      const absoluteExpiresAt = now + config.lifetimes.sessionAbsolute * 1000;
      await tx.sessions.insert({
        sessionId, tokenHash: sha256Hex(randomToken(32)), identityId, deviceId, assurance: 'passkey', amr: [...PASSKEY_AMR], authTime: now, stepUpAt: null,
        credId: null, createdAt: now, lastSeenAt: now, idleExpiresAt: Math.min(absoluteExpiresAt, now + config.lifetimes.sessionIdle * 1000), absoluteExpiresAt, revokedAt: null,
      });
      await tx.devices.upsert(identityId, deviceId, now);
      await tx.oidc.insertCode({
        codeHash: sha256Hex(code), clientId: client.clientId, redirectUri: authz.redirectUri, identityId,
        sessionId,
        scope: formatScope(authz.scopes), resource: authz.resource ?? null, nonce: authz.nonce ?? null, codeChallenge: authz.codeChallenge, dpopJkt: null,
        offline: false,
        assurance: 'passkey', amr: PASSKEY_AMR, authTime: now, createdAt: now, expiresAt: now + config.lifetimes.authorizationCode * 1000, consumedAt: null, grantId: null,
      });
      const recorded = await events.record(tx, { type: 'signin.in_place', at: now, outcome: 'success', client_id: client.clientId, transport: 'direct', identityId, assurance: 'passkey' });
      return recorded.receipt;
    });
    return { ok: true, code, state: authz.state ?? '', iss: config.issuer, ...(receipt ? { receipt } : {}) };
  });
}
