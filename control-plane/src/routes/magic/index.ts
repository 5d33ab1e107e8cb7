import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { linkRefusalPage, magicRequestedPage, magicRequestPage, signedInContinuePage } from '../../pages/link-pages.js';
import { checkSignInOrigin } from '../../plugins/session.js';
import { browserOf, currentDeviceId, ensureDeviceId, setSessionCookies } from '../../http/session-cookies.js';
import { limitPerIp } from '../../http/code-guard.js';
import { checkEmailAddress } from '../../email/addresses.js';
import { consoleSessionOf } from '../../http/operator-access.js';
import { dryRunSignInLink, redeemSignInLink, requestSignInLink, type LinkExtras } from '../../magic/sign-in-link.js';
import { isHtmlFormPost } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { isAllowedReturn } from '../../magic/return.js';

const PROJECT_MAX = 80;
/** The one answer of a real request, whether or not the address has an account, and over the limit too. */
const REQUESTED =
  'If this address is verified on an account, a sign-in link is on its way. It works once, for a few minutes, in this browser only.';

/** An operator's console session of the same account as the everyday session (docs/console.md). */
async function consoleOperatorOf(app: FastifyInstance, request: FastifyRequest): Promise<boolean> {
  const opened = await consoleSessionOf(app.kp, request);
  return opened?.role === 'operator' && opened.identityId === request.kp.session?.identityId;
}

/** `dryRun` takes any value: present and not an explicit false value means yes (docs/accounts.md#magic-links). */
function isDryRun(value: unknown): boolean {
  return (
    value !== undefined &&
    value !== null &&
    value !== false &&
    value !== '' &&
    value !== 0 &&
    value !== 'false' &&
    value !== '0'
  );
}

function cleanProject(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value
    .replace(/[\u0000-\u001f\u007f]/g, ' ')
    .trim()
    .slice(0, PROJECT_MAX);
  return text === '' ? undefined : text;
}

/** Magic sign-in links: mailed only to verified addresses, one use, 10 minutes, on the requesting device. */
export default async function magicRoutes(app: FastifyInstance): Promise<void> {
  app.post(
    '/auth/magic/request',
    {
      // The no-JavaScript form: a refusal shows the form again, with the address and the reason.
      config: {
        errorPage: async (request, failure) => {
          const body = (request.body ?? {}) as { email?: string; return?: string; project?: string };
          return magicRequestPage(request, {
            email: typeof body.email === 'string' ? body.email : '',
            reason: failure.reason,
            ...(await formExtras(body)),
          });
        },
      },
      schema: {
        tags: ['accounts'],
        summary:
          'Requests a magic sign-in link; answers the same whether or not the address has an account. `dryRun` (session) returns the link instead of mailing it',
        body: {
          type: 'object',
          required: ['email'],
          additionalProperties: false,
          properties: {
            email: { type: 'string', minLength: 3, maxLength: 254 },
            dryRun: {
              description:
                'Any value but false/0/"": return the link without sending. Own verified address with a session; any address for the founder at `sensitive` (receipted).',
            },
            return: {
              type: 'string',
              maxLength: 2048,
              description:
                'Where to land after sign-in: a path on this server (or, later, a registered relying-party URI).',
            },
            project: {
              type: 'string',
              maxLength: 200,
              description: 'Display name of the application being signed in to, shown as plain text.',
            },
          },
        },
        response: {
          200: okObject({
            message: { type: 'string' },
            dryRun: { type: 'boolean' },
            link: { type: 'string' },
            expiresAt: { type: 'integer' },
            receipt: receiptField,
          }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      if (!isHtmlFormPost(request)) return requestLink(request, reply);
      // The no-JavaScript form: the same answer as a page.
      await requestLink(request, reply);
      reply.type('text/html; charset=utf-8');
      return magicRequestedPage(request);
    },
  );

  app.get(
    '/auth/magic/request',
    {
      schema: {
        tags: ['accounts'],
        summary: 'HTML page: ask for a magic sign-in link (a plain form, no JavaScript needed)',
        produces: ['text/html'],
        querystring: {
          type: 'object',
          properties: { return: { type: 'string', maxLength: 2048 }, project: { type: 'string', maxLength: 200 } },
        },
      },
    },
    async (request, reply) => {
      reply.type('text/html; charset=utf-8');
      return magicRequestPage(request, await formExtras(request.query as { return?: string; project?: string }));
    },
  );

  /** `return` (only when allowed) and `project` carried through the request form. */
  async function formExtras(source: { return?: string; project?: string }): Promise<LinkExtras> {
    const returnTo = source.return ? await isAllowedReturn(app.kp, source.return) : null;
    const project = cleanProject(source.project);
    return { ...(returnTo ? { returnTo } : {}), ...(project ? { project } : {}) };
  }

  async function requestLink(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ ok: true; message?: string; dryRun?: boolean; link?: string; expiresAt?: number; receipt?: string }> {
    checkSignInOrigin(app.kp, request);
    await limitPerIp(app.kp, request, 'magic-request');
    const body = request.body as { email: string; dryRun?: unknown; return?: string; project?: string };
    const email = checkEmailAddress(body.email);
    let returnTo: string | undefined;
    if (body.return !== undefined && body.return !== '') {
      returnTo = (await isAllowedReturn(app.kp, body.return)) ?? undefined;
      if (!returnTo) throw fail('invalid_return', 'return must be a path on this server');
    }
    const extras = {
      ...(returnTo ? { returnTo } : {}),
      ...(cleanProject(body.project) ? { project: cleanProject(body.project)! } : {}),
    };
    if (isDryRun(body.dryRun))
      return {
        ok: true,
        dryRun: true,
        ...(await dryRunSignInLink(app.kp, request.kp.session, email, extras, await consoleOperatorOf(app, request))),
      };

    // The device cookie is minted for every requester, so the answer's headers do not differ either.
    const deviceId = request.kp.session?.deviceId ?? ensureDeviceId(app.kp, request, reply);
    // Counted for every address, known or not; over the limit the answer is the same and nothing is sent.
    await requestSignInLink(app.kp, email, deviceId, extras);
    return { ok: true, message: REQUESTED };
  }

  app.get(
    '/auth/magic',
    {
      // A HEAD (link preview, scanner) must never consume a one-time link.
      exposeHeadRoute: false,
      // A link that cannot be used: why, and a way to ask for a new one (keeping return and project).
      config: {
        errorPage: async (request, failure) => {
          const query = request.query as { return?: string; project?: string };
          const extras = await formExtras(query);
          const again = new URLSearchParams();
          if (extras.returnTo) again.set('return', extras.returnTo);
          if (extras.project) again.set('project', extras.project);
          return linkRefusalPage({
            request,
            reason: failure.reason,
            project: cleanProject(query.project),
            retryHref: `/auth/magic/request${again.size ? `?${again.toString()}` : ''}`,
            retryLabel: 'link.retry_magic',
          });
        },
      },
      schema: {
        tags: ['accounts'],
        summary:
          'Consumes a magic link on the device that requested it, signs in at `email` and hands off to the validated return (or /account)',
        querystring: {
          type: 'object',
          properties: {
            token: { type: 'string', maxLength: 200 },
            return: { type: 'string', maxLength: 2048 },
            project: { type: 'string', maxLength: 200 },
          },
        },
        produces: ['text/html'],
        response: { ...errorResponses },
      },
    },
    async (request, reply) => {
      const query = request.query as { token?: string; return?: string; project?: string };
      return redeem(request, reply, query.token ?? '', query.return, cleanProject(query.project));
    },
  );

  async function redeem(
    request: FastifyRequest,
    reply: FastifyReply,
    token: string,
    rawReturn: string | undefined,
    project: string | undefined,
  ) {
    // Validated before the token is touched: a link with a bad return is refused and stays unused.
    let target = '/account';
    if (rawReturn !== undefined && rawReturn !== '') {
      const allowed = await isAllowedReturn(app.kp, rawReturn);
      if (!allowed) throw fail('invalid_return', 'the return target is not allowed');
      target = allowed;
    }
    const { sessionToken } = await redeemSignInLink(app.kp, token, {
      ...browserOf(app.kp, reply),
      presentedDeviceId: currentDeviceId(app.kp, request) ?? request.kp.session?.deviceId ?? null,
    });
    setSessionCookies(app.kp, reply, sessionToken);
    // A path on this server (a pending authorize request hands off to its client from there) is
    // followed; a relying-party URI is only linked: anyone can register one, and the link proves
    // no client (docs/security.md "Open redirects").
    if (target.startsWith('/')) return reply.redirect(target, 303);
    reply.type('text/html; charset=utf-8');
    return signedInContinuePage(request, target, project);
  }
}
