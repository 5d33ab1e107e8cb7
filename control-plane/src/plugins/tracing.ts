import fp from 'fastify-plugin';
import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { incomingTrace } from '#lib/telemetry/trace-context.js';
import type { Tracing } from '#lib/telemetry/tracing.js';

/** Probes and scrapes, every few seconds from every load balancer and Prometheus: no traces. */
const UNTRACED_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

interface Traced {
  span: Span;
  context: Context;
}

/**
 * One server span per request, named `<method> <route template>` (`GET /receipts/:hash`), never
 * by the path or its query. It records the method, the template, the scheme, the status and a
 * failure's reason: no header, no cookie, no path or query value, no address. A `traceparent`
 * is continued only from `http.trustedProxies`; anyone else's becomes a link (lib/telemetry/trace-context.ts).
 * Registered only when tracing is on (app.ts): off, no hook runs.
 */
export const tracingPlugin = fp(
  async (app: FastifyInstance, options: { tracing: Tracing; trusted: (address: string) => boolean }) => {
    const { tracer } = options.tracing;
    const requests = new WeakMap<FastifyRequest, Traced>();
    // The span's context is entered again at each stage: a body is parsed from stream events,
    // which run outside the context the request arrived in, and storage spans must find their parent.
    const enter = (request: FastifyRequest, next: () => void): void => {
      const traced = requests.get(request);
      if (traced) context.with(traced.context, next);
      else next();
    };

    app.addHook('onRequest', (request, _reply, done) => {
      const route = request.routeOptions.url;
      if (route !== undefined && UNTRACED_ROUTES.has(route)) return done();
      const incoming = incomingTrace(request.headers, options.trusted(request.socket.remoteAddress ?? ''));
      const span = tracer.startSpan(
        route === undefined ? request.method : `${request.method} ${route}`,
        {
          kind: SpanKind.SERVER,
          links: incoming.links,
          attributes: {
            [ATTR_HTTP_REQUEST_METHOD]: request.method,
            [ATTR_URL_SCHEME]: request.protocol,
            ...(route === undefined ? {} : { [ATTR_HTTP_ROUTE]: route }),
            'keyplane.request_id': request.id,
          },
        },
        incoming.parent,
      );
      const traced = { span, context: trace.setSpan(incoming.parent, span) };
      requests.set(request, traced);
      context.with(traced.context, done);
    });
    app.addHook('preParsing', (request, _reply, payload, done) => enter(request, () => done(null, payload)));
    app.addHook('preValidation', (request, _reply, done) => enter(request, done));
    app.addHook('preHandler', (request, _reply, done) => enter(request, done));
    app.addHook('onError', (request, _reply, error, done) => {
      requests.get(request)?.span.setAttribute(ATTR_ERROR_TYPE, isKeyplaneError(error) ? error.reason : 'internal');
      done();
    });
    const end = (request: FastifyRequest, status: number | undefined): void => {
      const traced = requests.get(request);
      if (!traced) return;
      requests.delete(request);
      if (status === undefined) traced.span.setAttribute(ATTR_ERROR_TYPE, 'aborted');
      else traced.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
      if (status === undefined || status >= 500) traced.span.setStatus({ code: SpanStatusCode.ERROR });
      traced.span.end();
    };
    app.addHook('onResponse', (request, reply, done) => {
      end(request, reply.statusCode);
      done();
    });
    app.addHook('onRequestAbort', (request, done) => {
      end(request, undefined);
      done();
    });
  },
  { name: 'keyplane-tracing' },
);
