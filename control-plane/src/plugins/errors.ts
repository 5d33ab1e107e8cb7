import type { ServerResponse } from 'node:http';
import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDependencyUnavailable, unavailableFailure } from '#lib/errors/dependency-outage.js';
import { KeyplaneError, fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import type { Reason } from '#lib/errors/reasons.js';
import { oauthErrorFor, oauthFields } from '#lib/oauth/errors.js';
import { wantsJson } from '../http/negotiate.js';
import { PAGE_REFUSAL, refusalPage } from '../pages/refusal-page.js';

/**
 * A route's own page for a refusal: its form shown again with the person's input (`request.body`)
 * and the reason, or a page that says what to do next. `undefined` leaves it to the shared page.
 * The error handler sets the status, the failure's headers and the type after it; `reply` is for
 * what else the page needs (its referrer policy).
 */
export type ErrorPage = (
  request: FastifyRequest,
  failure: KeyplaneError,
  reply: FastifyReply,
) => string | undefined | Promise<string | undefined>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A route a person reaches in the browser: a refusal of a request that does not ask for JSON
     * (a navigation, a plain form post) is answered with a page instead of the envelope, by the
     * error handler (`true`: the shared refusal page; a function: the route's own, docs/errors.md#one-error-path).
     * Every route in the page context that sets nothing gets `'browser'` (plugins/page-context.ts):
     * the shared page only for a request that names text/html in Accept, so an API caller gets the
     * envelope whatever it sends. `false` opts a route out.
     */
    errorPage?: boolean | 'browser' | ErrorPage;
  }
}

/** The envelope schema, referenced under 4xx and 5xx of every route (fastify serializes error bodies with it). */
export const envelopeSchema = {
  $id: 'envelope',
  type: 'object',
  required: ['ok', 'reason'],
  properties: {
    ok: { const: false },
    reason: { type: 'string', description: 'Stable machine-readable code; see docs/errors.md.' },
    message: { type: 'string', description: 'Human-readable explanation; never internal detail.' },
  },
  additionalProperties: true,
} as const;

const FASTIFY_REASONS: Record<string, Reason> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
};

const STATUS_REASONS: Record<number, Reason> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

const MESSAGES: Partial<Record<Reason, string>> = {
  payload_too_large: 'the request body is larger than this server accepts',
  unsupported_media_type: 'send application/json (or form data where documented)',
  not_found: 'no such resource',
};

/** Turns anything thrown during a request into a KeyplaneError, without letting internal detail through. */
export function toKeyplaneError(error: unknown): KeyplaneError {
  if (isKeyplaneError(error)) return error;
  // PostgreSQL or Redis could not be reached (classified where the call was made): 503, never 500.
  if (isDependencyUnavailable(error)) return unavailableFailure(error);
  const e = error as FastifyError & { validation?: unknown; validationContext?: string };
  if (e && e.validation)
    return fail('invalid_request', `${e.validationContext ?? 'request'}${e.message.replace(/^[a-z]+/, '')}`.trim());
  const byCode = e?.code ? FASTIFY_REASONS[e.code] : undefined;
  if (byCode)
    return fail(byCode, byCode === 'invalid_request' ? 'the request body is not valid JSON' : MESSAGES[byCode]);
  if (e instanceof SyntaxError && (e as FastifyError).statusCode === 400)
    return fail('invalid_request', 'the request body is not valid JSON');
  const status = e?.statusCode;
  if (status && status >= 400 && status < 500) {
    const reason = STATUS_REASONS[status] ?? 'invalid_request';
    return fail(reason, MESSAGES[reason] ?? 'the request was refused', { status });
  }
  return fail('internal', 'something went wrong on our side; the request id identifies it in the logs');
}

/**
 * The envelope of a failure; on an OAuth endpoint also the RFC 6749 §5.2 pair, when the code that
 * failed did not set it (`oauthError` does), so failures raised before the handler carry it too.
 */
export function envelopeFor(failure: KeyplaneError, oauth = false): Record<string, unknown> {
  const envelope = failure.toEnvelope();
  if (!oauth || 'error' in envelope) return envelope;
  return { ...envelope, ...oauthFields(oauthErrorFor(failure.reason, failure.status), failure.message) };
}

const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data'];

/**
 * Whether a refusal is shown as a page: the route is a page (`config.errorPage`) and the request is
 * a browser's (a GET not asking for JSON, or a form post); scripts and API callers, which ask for
 * JSON or send it, get the envelope. On a route that has the page context's default (`'browser'`)
 * the request must also name text/html, as a browser's navigation and form post do and an API
 * caller's default Accept (any type) does not.
 */
function wantsErrorPage(request: FastifyRequest): boolean {
  const errorPage = request.routeOptions.config?.errorPage;
  if (!errorPage || wantsJson(request)) return false;
  if (errorPage === 'browser' && !(request.headers.accept ?? '').includes('text/html')) return false;
  if (request.method === 'GET' || request.method === 'HEAD') return true;
  const type = request.headers['content-type'] ?? '';
  return FORM_TYPES.some((form) => type.startsWith(form));
}

async function renderErrorPage(request: FastifyRequest, reply: FastifyReply, failure: KeyplaneError): Promise<string> {
  const own = request.routeOptions.config?.errorPage;
  if (typeof own === 'function') {
    try {
      const rendered = await own(request, failure, reply);
      if (rendered !== undefined) return rendered;
    } catch (error) {
      // The route's page could not be drawn (what it reads is down too): the shared page still says why.
      request.log.error({ err: error }, 'error page failed');
    }
  }
  // `true` marks the OAuth and OIDC front channel (authorize, logout, device approval): a request an
  // app sent, and the default words say so; every other page gets the words of a refused page.
  return refusalPage(request, failure, own === true ? {} : PAGE_REFUSAL);
}

/** The envelope as the answer: status, the failure's headers (Retry-After, WWW-Authenticate), JSON. */
function sendFailure(request: FastifyRequest, reply: FastifyReply, failure: KeyplaneError): FastifyReply {
  const { oauthErrors, errorMembers, errorType } = request.routeOptions.config ?? {};
  reply
    .code(failure.status)
    .headers(failure.headers)
    .type(errorType ?? 'application/json; charset=utf-8');
  return reply.send({ ...envelopeFor(failure, oauthErrors === true), ...errorMembers?.(failure.reason, failure) });
}

/**
 * For a route that took the response over from fastify (`reply.hijack()`, the MCP transport): the
 * envelope written to the raw response when nothing was sent yet, else the response ended.
 */
export function sendRawFailure(raw: ServerResponse, error: unknown): void {
  if (raw.headersSent) {
    raw.end();
    return;
  }
  const failure = toKeyplaneError(error);
  raw.writeHead(failure.status, { ...failure.headers, 'content-type': 'application/json; charset=utf-8' });
  raw.end(JSON.stringify(envelopeFor(failure)));
}

/**
 * The one place where failures become an answer: the `{ok: false, reason, message}` envelope, or
 * on a page route for a browser the page (`config.errorPage`), with the same status and headers.
 */
export const errorsPlugin = fp(
  async (app: FastifyInstance) => {
    app.addSchema(envelopeSchema);
    app.setErrorHandler(async (error, request, reply) => {
      const failure = toKeyplaneError(error);
      // An outage is logged once when it begins and once when it ends (plugins/dependencies.ts),
      // not per request; `not_ready` is the answer a load balancer polls for meanwhile.
      if (failure.reason === 'unavailable') request.log.debug({ reason: failure.reason }, 'request refused');
      else if (failure.status >= 500 && failure.reason !== 'not_ready')
        request.log.error({ err: error }, 'request failed');
      else request.log.info({ reason: failure.reason }, 'request refused');
      if (!wantsErrorPage(request)) return sendFailure(request, reply, failure);
      const body = await renderErrorPage(request, reply, failure);
      reply.code(failure.status).headers(failure.headers).type('text/html; charset=utf-8');
      return reply.send(body);
    });
    app.setNotFoundHandler((_request, reply) => {
      reply.code(404).type('application/json; charset=utf-8');
      return reply.send(fail('not_found', MESSAGES.not_found).toEnvelope());
    });
  },
  { name: 'keyplane-errors' },
);
