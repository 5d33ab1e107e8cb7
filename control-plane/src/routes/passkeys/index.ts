import type { FastifyInstance } from 'fastify';
import { issueSetupLink } from '../../accounts/founder.js';
import { finishSignIn, beginSignIn } from '../../accounts/sign-in.js';
import { beginSignUp, finishSignUp } from '../../accounts/sign-up.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import { CredentialLimits } from '../../passkeys/ceremony.js';
import {
  beginAddPasskey,
  declinePasskeyUpgrade,
  finishAddPasskey,
  listPasskeys,
  removePasskey,
  renamePasskey,
} from '../../passkeys/manage.js';
import { requireSession } from '../../plugins/session.js';
import { browserOf, setSessionCookies } from '../../http/session-cookies.js';
import enrolmentRoutes from './enrolment.js';

/** Kept where the direct grant imports them from. */

/** Where the browser goes after signing in or up. */
export const HOME = '/account';
const optionsResponse = {
  200: okObject({ options: { type: 'object', additionalProperties: true } }, ['options']),
  ...errorResponses,
};
const signedInResponse = {
  200: okObject({ identityId: { type: 'string' }, home: { type: 'string' }, receipt: { type: 'string' } }, [
    'identityId',
    'home',
  ]),
  ...errorResponses,
};
const receiptResponse = { 200: okObject({ receipt: { type: 'string' } }), ...errorResponses };
const passkeyItem = {
  type: 'object',
  properties: {
    credId: { type: 'string' },
    label: { type: 'string' },
    createdAt: { type: 'integer' },
    lastUsedAt: { type: ['integer', 'null'] },
    backedUp: { type: 'boolean' },
    backupEligible: { type: 'boolean' },
    transports: { type: 'array', items: { type: 'string' } },
    aaguid: { type: ['string', 'null'] },
    authenticator: {
      type: ['object', 'null'],
      properties: { name: { type: 'string' }, icon: { type: 'string' } },
    },
  },
};

/** Passkey sign-up, sign-in and management (docs/accounts.md). */
export default async function passkeyRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const limits = new CredentialLimits(services);

  // Under `--workers N` the primary announces the link, once for the instance.
  if (services.background !== false)
    app.addHook('onReady', async () => {
      await issueSetupLink(services, app.log);
    });

  // ---- a provisioned account's first passkey, from its mailed link (docs/scim.md#enrolment-links) ----
  await app.register(enrolmentRoutes, { home: HOME });

  // ---- sign-up ----

  app.post(
    '/auth/registration-options',
    {
      schema: {
        tags: ['passkeys'],
        summary: 'Begin a passkey sign-up: creation options and a one-use signup token',
        description:
          'Usernames are case-folded and must match `^[a-z0-9][a-z0-9._-]{2,31}$`. `setupToken` (from the founder setup link) creates the founder account.',
        body: {
          type: 'object',
          required: ['username'],
          properties: { username: { type: 'string' }, displayName: { type: 'string' }, setupToken: { type: 'string' } },
        },
        response: {
          200: okObject({ options: { type: 'object', additionalProperties: true }, signupToken: { type: 'string' } }, [
            'options',
            'signupToken',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const body = request.body as { username: string; displayName?: string; setupToken?: string };
      await limits.perIp(request, 'signup');
      return { ok: true, ...(await beginSignUp(services, body)) };
    },
  );

  app.post(
    '/auth/registration-verify',
    {
      schema: {
        tags: ['passkeys'],
        summary: 'Finish a passkey sign-up: creates the account with its first passkey and signs in',
        body: {
          type: 'object',
          required: ['user', 'response', 'signupToken'],
          properties: { user: { type: 'string' }, response: {}, signupToken: { type: 'string' } },
        },
        response: signedInResponse,
      },
    },
    async (request, reply) => {
      const body = request.body as { user: string; response: unknown; signupToken: string };
      await limits.perIp(request, 'signup');
      const { identityId, session, receipt } = await finishSignUp(services, body, browserOf(app.kp, reply));
      setSessionCookies(app.kp, reply, session.token);
      return { ok: true, identityId, home: HOME, ...(receipt ? { receipt } : {}) };
    },
  );

  // ---- sign-in ----

  app.get(
    '/auth/assertion-options',
    {
      schema: {
        tags: ['passkeys'],
        summary: "Begin a passkey sign-in: usernameless without `user`, or limited to that account's passkeys",
        querystring: { type: 'object', properties: { user: { type: 'string' } } },
        response: optionsResponse,
      },
    },
    async (request) => {
      const { user } = request.query as { user?: string };
      await limits.perIp(request, 'signin-options');
      return { ok: true, options: await beginSignIn(services, user) };
    },
  );

  app.post(
    '/auth/assertion-verify',
    {
      schema: {
        tags: ['passkeys'],
        summary: 'Finish a passkey sign-in: sets the session cookie',
        description:
          '`deviceId` is accepted for compatibility; the device is always the one named by the device cookie.',
        body: { type: 'object', required: ['response'], properties: { user: {}, response: {}, deviceId: {} } },
        response: signedInResponse,
      },
    },
    async (request, reply) => {
      const body = request.body as { user?: unknown; response: unknown };
      await limits.perIp(request, 'signin');
      const { identityId, session } = await finishSignIn(services, body, browserOf(app.kp, reply));
      setSessionCookies(app.kp, reply, session.token);
      return { ok: true, identityId, home: HOME, ...(session.receipt ? { receipt: session.receipt } : {}) };
    },
  );

  // ---- management (session) ----

  app.register(async (managed) => {
    managed.addHook('onRequest', requireSession);

    managed.post(
      '/auth/passkeys/list',
      {
        schema: {
          tags: ['passkeys'],
          summary: "The account's passkeys (never their public keys)",
          security: [{ sessionCookie: [] }],
          response: {
            200: okObject({ passkeys: { type: 'array', items: passkeyItem } }, ['passkeys']),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        return { ok: true, passkeys: await listPasskeys(services, request.kp.session!.identityId) };
      },
    );

    managed.post(
      '/auth/passkeys/rename',
      {
        schema: {
          tags: ['passkeys'],
          summary: 'Rename a passkey (labels: 1 to 64 characters)',
          security: [{ sessionCookie: [] }],
          body: {
            type: 'object',
            required: ['credId', 'label'],
            properties: { credId: { type: 'string' }, label: {} },
          },
          response: { 200: okObject(), ...errorResponses },
        },
      },
      async (request) => {
        const { credId, label } = request.body as { credId: string; label: unknown };
        await renamePasskey(services, request.kp.session!.identityId, credId, label);
        return { ok: true };
      },
    );

    managed.post(
      '/auth/passkeys/remove',
      {
        schema: {
          tags: ['passkeys'],
          summary: 'Remove a passkey; never the last one',
          security: [{ sessionCookie: [] }],
          body: { type: 'object', required: ['credId'], properties: { credId: { type: 'string' } } },
          response: receiptResponse,
        },
      },
      async (request) => {
        const { credId } = request.body as { credId: string };
        const { receipt } = await removePasskey(services, request.kp.session!.identityId, credId);
        return { ok: true, ...(receipt ? { receipt } : {}) };
      },
    );

    managed.post(
      '/auth/passkeys/upgrade/decline',
      {
        schema: {
          tags: ['passkeys'],
          summary:
            'Decline the passkey offered after a sign-in without one (magic link, recovery code, connection): not offered again for a month',
          security: [{ sessionCookie: [] }],
          response: { 200: okObject(), ...errorResponses },
        },
      },
      async (request) => {
        await declinePasskeyUpgrade(services, request.kp.session!.identityId);
        return { ok: true };
      },
    );

    managed.post(
      '/auth/passkeys/add-options',
      {
        schema: {
          tags: ['passkeys'],
          summary: 'Begin adding a passkey to the account',
          security: [{ sessionCookie: [] }],
          response: optionsResponse,
        },
      },
      async (request) => {
        const session = request.kp.session!;
        await limits.perIp(request, 'passkey-add');
        await limits.perAccount('passkey-add', session.identityId);
        return { ok: true, options: await beginAddPasskey(services, session) };
      },
    );

    managed.post(
      '/auth/passkeys/add-verify',
      {
        schema: {
          tags: ['passkeys'],
          summary: 'Finish adding a passkey',
          security: [{ sessionCookie: [] }],
          body: { type: 'object', required: ['response'], properties: { response: {}, label: {} } },
          response: {
            200: okObject({ credId: { type: 'string' }, label: { type: 'string' }, receipt: { type: 'string' } }, [
              'credId',
              'label',
            ]),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { response: unknown; label?: unknown };
        const session = request.kp.session!;
        await limits.perIp(request, 'passkey-add');
        await limits.perAccount('passkey-add', session.identityId);
        return { ok: true, ...(await finishAddPasskey(services, session, body)) };
      },
    );
  });
}
