import type { FastifyInstance } from 'fastify';
import { directGrant, directGrantOptions } from '../../oidc/direct-grant.js';
import { inPlaceClientFor, inPlacePreflight } from '../../http/in-place-origin.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';

export const DIRECT_PATH = '/auth/authorize/direct';
export const DIRECT_OPTIONS_PATH = '/auth/authorize/direct/options';

const PREFLIGHT = { methods: 'POST', headers: 'Content-Type' };

const directBody = {
  type: 'object',
  required: ['client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state'],
  properties: {
    client_id: { type: 'string' },
    redirect_uri: { type: 'string', description: 'exact registered callback the code is bound to' },
    code_challenge: { type: 'string' },
    code_challenge_method: { const: 'S256' },
    state: { type: 'string' },
    nonce: { type: 'string' },
    scope: { type: 'string', description: 'default openid' },
    resource: { type: 'string' },
    assertion: { type: 'object', required: ['response'], properties: { user: {}, response: { type: 'object' } } },
    registration: {
      type: 'object',
      required: ['user', 'response'],
      properties: { user: { type: 'string' }, response: { type: 'object' }, signupToken: { type: 'string' } },
    },
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
  for (const path of [DIRECT_PATH, DIRECT_OPTIONS_PATH]) {
    app.options(
      path,
      {
        config: { checksOwnOrigin: true },
        schema: {
          tags: ['oidc'],
          summary: `CORS preflight for ${path} (registered in-place origins only)`,
          hide: true,
        },
      },
      async (request, reply) => inPlacePreflight(app.kp, request, reply, PREFLIGHT),
    );
  }

  app.post(
    DIRECT_OPTIONS_PATH,
    {
      config: { checksOwnOrigin: true },
      schema: {
        tags: ['oidc'],
        summary: "Direct grant, step 1: WebAuthn options for a passkey ceremony on the relying party's origin",
        description:
          "Sign-in: `{ok, options}` (usernameless, or limited to `username`'s passkeys). Sign-up (`signup: true` with `username`, first-party clients only): `{ok, options, signupToken}`. CORS-scoped to the client's registered origins.",
        body: {
          type: 'object',
          required: ['client_id'],
          properties: { client_id: { type: 'string' }, username: { type: 'string' }, signup: { type: 'boolean' } },
        },
        response: {
          200: okObject({ options: { type: 'object', additionalProperties: true }, signupToken: { type: 'string' } }, [
            'options',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const body = request.body as { client_id: string; username?: string; signup?: boolean };
      const { client, origin } = await inPlaceClientFor(app.kp, request, reply, body.client_id);
      const started = await directGrantOptions(app.kp, { client, origin, ip: request.ip }, body);
      return { ok: true, ...started };
    },
  );

  app.post(
    DIRECT_PATH,
    {
      config: { checksOwnOrigin: true },
      schema: {
        tags: ['oidc'],
        summary:
          "Direct grant, step 2: the passkey response from the relying party's page, answered with a one-time authorization code",
        description:
          "CORS-scoped to the client's registered origins; auth-throttled. The code is bound to the client, `redirect_uri` and the PKCE challenge and is exchanged at /auth/token. TOTP active: 403 `step_up_required` with `popup`. No prior approval and not first-party: 403 `consent_required` with `popup`.",
        body: directBody,
        response: {
          200: okObject(
            { code: { type: 'string' }, state: { type: 'string' }, iss: { type: 'string' }, receipt: receiptField },
            ['code', 'state', 'iss'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const body = request.body as Record<string, unknown>;
      const { client, origin } = await inPlaceClientFor(app.kp, request, reply, body.client_id);
      return { ok: true, ...(await directGrant(app.kp, { client, origin, ip: request.ip }, body)) };
    },
  );
}
