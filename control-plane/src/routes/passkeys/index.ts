import type { FastifyInstance } from 'fastify';
import { checkFreeText, checkUsername, DISPLAY_NAME_MAX, PASSKEY_LABEL_MAX } from '../../../../lib/accounts/username.js';
import { fail } from '../../../../lib/errors/keyplane-error.js';
import { randomId, randomToken } from '../../../../lib/util/random.js';
import { sha256Hex } from '../../../../lib/util/sha256.js';
import { requireSession } from '../../plugins/session.js';
import { currentDeviceId } from '../../sessions/cookies.js';
import { startSession } from '../../sessions/start-session.js';
import type { StoredCredential } from '../../storage/types.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import {
  CredentialLimits,
  creationOptions,
  creationOptionsFor,
  readAssertion,
  readRegistration,
  requestOptions,
  takeChallenge,
  verifyAssertion,
  verifyRegistration,
} from './ceremony.js';
import { decoyCredentials } from './decoy.js';
import { checkSetupToken, consumeSetupToken, issueSetupLink } from './founder.js';

/** Where the browser goes after signing in or up. */
export const HOME = '/account';
/** RFC 8176: proof of possession of a key, with the user verified by the authenticator. */
export const PASSKEY_AMR = ['pop', 'user'];

interface SignupState {
  challenge: string;
  identityId: string;
  username: string;
  displayName: string;
  setupToken?: string;
}

const signupKey = (token: string) => `webauthn:signup:${sha256Hex(token)}`;

const optionsResponse = { 200: okObject({ options: { type: 'object', additionalProperties: true } }, ['options']), ...errorResponses };
const signedInResponse = {
  200: okObject({ identityId: { type: 'string' }, home: { type: 'string' }, receipt: { type: 'string' } }, ['identityId', 'home']),
  ...errorResponses,
};
const receiptResponse = { 200: okObject({ receipt: { type: 'string' } }), ...errorResponses };
const passkeyItem = {
  type: 'object',
  properties: {
    credId: { type: 'string' }, label: { type: 'string' }, createdAt: { type: 'integer' }, lastUsedAt: { type: ['integer', 'null'] },
    backedUp: { type: 'boolean' }, backupEligible: { type: 'boolean' }, transports: { type: 'array', items: { type: 'string' } },
  },
};

/** Passkey sign-up, sign-in and management (spec "Release history and sign-in" and "Account"). */
export default async function passkeyRoutes(app: FastifyInstance): Promise<void> {
  const limits = new CredentialLimits(app);
  const { storage } = app.kp;

  app.addHook('onReady', async () => {
    await issueSetupLink(app);
  });

  // ---- sign-up ----

  app.post('/auth/registration-options', {
    schema: {
      tags: ['passkeys'],
      summary: 'Begin a passkey sign-up: creation options and a one-use signup token',
      description: 'Usernames are case-folded and must match `^[a-z0-9][a-z0-9._-]{2,31}$`. `setupToken` (from the founder setup link) creates the founder account.',
      body: {
        type: 'object', required: ['username'],
        properties: { username: { type: 'string' }, displayName: { type: 'string' }, setupToken: { type: 'string' } },
      },
      response: { 200: okObject({ options: { type: 'object', additionalProperties: true }, signupToken: { type: 'string' } }, ['options', 'signupToken']), ...errorResponses },
    },
  }, async (request) => {
    const body = request.body as { username: string; displayName?: string; setupToken?: string };
    await limits.perIp(request, 'signup');
    const username = checkUsername(body.username);
    await limits.perAccount('signup', username);
    const displayName = checkFreeText(body.displayName ?? '', DISPLAY_NAME_MAX, 'display_name_invalid', 'the display name');
    if (body.setupToken !== undefined) await checkSetupToken(app, body.setupToken);
    else if (!app.kp.config.signup.selfService) throw fail('signup_closed', 'sign-up is closed on this server; ask its operator');
    if (await storage.identities.findByUsername(username)) throw fail('username_taken', 'that username is taken');

    const identityId = randomId('usr');
    const options = await creationOptions(app, { identityId, username, displayName }, []);
    const signupToken = randomToken(32);
    const state: SignupState = { challenge: options.challenge, identityId, username, displayName, ...(body.setupToken ? { setupToken: body.setupToken } : {}) };
    if (!(await app.kp.state.setIfAbsent(signupKey(signupToken), JSON.stringify(state), app.kp.config.lifetimes.challenge * 1000))) throw fail('internal', 'signup token collision');
    return { ok: true, options, signupToken };
  });

  app.post('/auth/registration-verify', {
    schema: {
      tags: ['passkeys'],
      summary: 'Finish a passkey sign-up: creates the account with its first passkey and signs in',
      body: { type: 'object', required: ['user', 'response', 'signupToken'], properties: { user: { type: 'string' }, response: {}, signupToken: { type: 'string' } } },
      response: signedInResponse,
    },
  }, async (request, reply) => {
    const body = request.body as { user: string; response: unknown; signupToken: string };
    await limits.perIp(request, 'signup');
    const raw = await app.kp.state.take(signupKey(body.signupToken));
    if (raw === null) throw fail('challenge_unknown', 'this sign-up expired or was finished already; start again');
    const state = JSON.parse(raw) as SignupState;
    if (checkUsername(body.user) !== state.username) throw fail('challenge_mismatch', 'the sign-up was started for another username');
    await limits.perAccount('signup', state.username);
    const { clientData, fields } = readRegistration(body.response);
    const verified = await verifyRegistration(app, body.response, clientData, fields, state.challenge);

    const restoreSetup = state.setupToken ? await consumeSetupToken(app, state.setupToken) : null;
    try {
      const now = app.kp.now();
      const result = await storage.transaction(async (tx) => {
        const founder = restoreSetup !== null;
        if (founder && (await tx.identities.founderExists())) throw fail('invalid_setup_token', 'a founder account exists already');
        const created = await tx.identities.create({
          identityId: state.identityId, username: state.username, displayName: state.displayName, preferences: {}, founder, createdAt: now, updatedAt: now,
        });
        if (!created) throw fail('username_taken', 'that username was taken in the meantime');
        if (!(await tx.credentials.insert(credentialRecord(state.identityId, verified, 'Passkey 1', now)))) throw fail('credential_exists', 'this passkey is registered already');
        const account = await app.kp.events.record(tx, { type: 'account.created', at: now, outcome: 'success', identityId: state.identityId, founder, credId: verified.credId });
        const session = await startSession(app, reply, tx, { identityId: state.identityId, assurance: 'passkey', amr: PASSKEY_AMR, credId: verified.credId });
        return account.receipt ?? session.receipt;
      });
      return { ok: true, identityId: state.identityId, home: HOME, ...(result ? { receipt: result } : {}) };
    } catch (error) {
      await restoreSetup?.();
      throw error;
    }
  });

  // ---- sign-in ----

  app.get('/auth/assertion-options', {
    schema: {
      tags: ['passkeys'],
      summary: 'Begin a passkey sign-in: usernameless without `user`, or limited to that account\'s passkeys',
      querystring: { type: 'object', properties: { user: { type: 'string' } } },
      response: optionsResponse,
    },
  }, async (request) => {
    const { user } = request.query as { user?: string };
    await limits.perIp(request, 'signin-options');
    if (user === undefined || user === '') return { ok: true, options: await requestOptions(app, null, { purpose: 'signin' }) };
    const username = checkUsername(user);
    await limits.perAccount('signin-options', username);
    const identity = await storage.identities.findByUsername(username);
    // An unknown name gets the same shape, work and answer every time: decoy credential ids
    // derived from a keyed hash of the name, so this endpoint tells neither which usernames exist
    // nor their credential ids (docs/security.md "Account enumeration"); the verify step refuses.
    const identityId = identity?.identityId ?? randomId('usr');
    const real = await storage.credentials.listByIdentity(identityId);
    const allow = identity ? real : decoyCredentials(app.kp.secrets.macKey('assertion-decoy'), username);
    return { ok: true, options: await requestOptions(app, allow, { purpose: 'signin', identityId }) };
  });

  app.post('/auth/assertion-verify', {
    schema: {
      tags: ['passkeys'],
      summary: 'Finish a passkey sign-in: sets the session cookie',
      description: '`deviceId` is accepted for the spec\'s shape; the device is always the one named by the device cookie.',
      body: { type: 'object', required: ['response'], properties: { user: {}, response: {}, deviceId: {} } },
      response: signedInResponse,
    },
  }, async (request, reply) => {
    const body = request.body as { user?: unknown; response: unknown };
    await limits.perIp(request, 'signin');
    const { id, clientData, fields, userHandle } = readAssertion(body.response);
    const state = await takeChallenge(app, clientData, 'signin');
    const credential = await storage.credentials.get(id);
    if (!credential) throw fail('unknown_credential', 'this passkey is not registered here');
    if (state.identityId && state.identityId !== credential.identityId) throw fail('unknown_credential', 'this passkey does not belong to that account');
    // spec: `user` is "any, optional"; absent, null or empty means usernameless
    if (body.user !== undefined && body.user !== null && body.user !== '') {
      const identity = await storage.identities.findByUsername(checkUsername(body.user));
      if (!identity || identity.identityId !== credential.identityId) throw fail('unknown_credential', 'this passkey does not belong to that account');
    }
    if (userHandle !== undefined && userHandle !== credential.identityId) throw fail('unknown_credential', 'this passkey does not belong to that account');
    await limits.perAccount('signin', credential.identityId);
    const use = await verifyAssertion(app, body.response, clientData, fields, credential);
    const deviceId = currentDeviceId(app, request);
    const now = app.kp.now();
    const { receipt } = await storage.transaction(async (tx) => {
      await tx.credentials.recordUse(credential.credId, { ...use, at: now });
      return startSession(app, reply, tx, {
        identityId: credential.identityId, assurance: 'passkey', amr: PASSKEY_AMR, credId: credential.credId, ...(deviceId ? { deviceId } : {}),
      });
    });
    return { ok: true, identityId: credential.identityId, home: HOME, ...(receipt ? { receipt } : {}) };
  });

  // ---- management (session) ----

  app.register(async (managed) => {
    managed.addHook('onRequest', requireSession);

    managed.post('/auth/passkeys/list', {
      schema: {
        tags: ['passkeys'], summary: 'The account\'s passkeys (never their public keys)', security: [{ sessionCookie: [] }],
        response: { 200: okObject({ passkeys: { type: 'array', items: passkeyItem } }, ['passkeys']), ...errorResponses },
      },
    }, async (request) => {
      const passkeys = await storage.credentials.listByIdentity(request.kp.session!.identityId);
      return { ok: true, passkeys: passkeys.map(({ credId, label, createdAt, lastUsedAt, backedUp, backupEligible, transports }) => ({ credId, label, createdAt, lastUsedAt, backedUp, backupEligible, transports })) };
    });

    managed.post('/auth/passkeys/rename', {
      schema: {
        tags: ['passkeys'], summary: 'Rename a passkey (labels: 1 to 64 characters)', security: [{ sessionCookie: [] }],
        body: { type: 'object', required: ['credId', 'label'], properties: { credId: { type: 'string' }, label: {} } },
        response: { 200: okObject(), ...errorResponses },
      },
    }, async (request) => {
      const { credId, label } = request.body as { credId: string; label: unknown };
      const clean = checkFreeText(label, PASSKEY_LABEL_MAX, 'label_invalid', 'the label');
      if (!(await storage.credentials.rename(request.kp.session!.identityId, credId, clean))) throw fail('unknown_passkey', 'no such passkey on this account');
      return { ok: true };
    });

    managed.post('/auth/passkeys/remove', {
      schema: {
        tags: ['passkeys'], summary: 'Remove a passkey; never the last one', security: [{ sessionCookie: [] }],
        body: { type: 'object', required: ['credId'], properties: { credId: { type: 'string' } } },
        response: receiptResponse,
      },
    }, async (request) => {
      const { credId } = request.body as { credId: string };
      const { identityId } = request.kp.session!;
      const now = app.kp.now();
      const { receipt } = await storage.transaction(async (tx) => {
        const owned = (await tx.credentials.listByIdentity(identityId)).some((c) => c.credId === credId);
        if (!owned) throw fail('unknown_passkey', 'no such passkey on this account');
        if ((await tx.credentials.countByIdentity(identityId)) <= 1) throw fail('last_passkey', 'this is the account\'s last passkey; add another before removing it');
        await tx.credentials.remove(identityId, credId);
        return app.kp.events.record(tx, { type: 'passkey.removed', at: now, outcome: 'success', identityId, credId });
      });
      return { ok: true, ...(receipt ? { receipt } : {}) };
    });

    managed.post('/auth/passkeys/add-options', {
      schema: { tags: ['passkeys'], summary: 'Begin adding a passkey to the account', security: [{ sessionCookie: [] }], response: optionsResponse },
    }, async (request) => {
      const session = request.kp.session!;
      await limits.perIp(request, 'passkey-add');
      await limits.perAccount('passkey-add', session.identityId);
      const identity = await storage.identities.get(session.identityId);
      if (!identity) throw fail('unauthorized', 'sign in first');
      const existing = await storage.credentials.listByIdentity(identity.identityId);
      const options = await creationOptionsFor(app, identity, existing, { purpose: 'add', identityId: identity.identityId, sessionId: session.id });
      return { ok: true, options };
    });

    managed.post('/auth/passkeys/add-verify', {
      schema: {
        tags: ['passkeys'], summary: 'Finish adding a passkey', security: [{ sessionCookie: [] }],
        body: { type: 'object', required: ['response'], properties: { response: {}, label: {} } },
        response: { 200: okObject({ credId: { type: 'string' }, label: { type: 'string' }, receipt: { type: 'string' } }, ['credId', 'label']), ...errorResponses },
      },
    }, async (request) => {
      const body = request.body as { response: unknown; label?: unknown };
      const session = request.kp.session!;
      await limits.perIp(request, 'passkey-add');
      await limits.perAccount('passkey-add', session.identityId);
      const { clientData, fields } = readRegistration(body.response);
      const state = await takeChallenge(app, clientData, 'add');
      if (state.identityId !== session.identityId || state.sessionId !== session.id) throw fail('challenge_mismatch', 'this passkey was started by another session');
      const verified = await verifyRegistration(app, body.response, clientData, fields, clientData.challenge);
      const now = app.kp.now();
      const result = await storage.transaction(async (tx) => {
        const count = await tx.credentials.countByIdentity(session.identityId);
        const label = body.label === undefined ? `Passkey ${count + 1}` : checkFreeText(body.label, PASSKEY_LABEL_MAX, 'label_invalid', 'the label');
        if (!(await tx.credentials.insert(credentialRecord(session.identityId, verified, label, now)))) throw fail('credential_exists', 'this passkey is registered already');
        const { receipt } = await app.kp.events.record(tx, { type: 'passkey.added', at: now, outcome: 'success', identityId: session.identityId, credId: verified.credId });
        return { label, receipt };
      });
      return { ok: true, credId: verified.credId, label: result.label, ...(result.receipt ? { receipt: result.receipt } : {}) };
    });
  });
}

export function credentialRecord(
  identityId: string,
  verified: { credId: string; publicKey: Uint8Array; counter: number; transports: string[]; backupEligible: boolean; backedUp: boolean },
  label: string,
  now: number,
): StoredCredential {
  return {
    credId: verified.credId, identityId, publicKey: verified.publicKey, counter: verified.counter, transports: verified.transports,
    backupEligible: verified.backupEligible, backedUp: verified.backedUp, label, createdAt: now, lastUsedAt: null,
  };
}
