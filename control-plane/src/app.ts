import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyServerFactory } from 'fastify';
import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import type { ControlPlaneServices } from './context.js';
import { compileAddressList } from '#lib/net/cidr.js';
import { sharedSchemaCompilers } from './http/schema-compilers.js';
import { dependenciesPlugin } from './plugins/dependencies.js';
import { errorsPlugin } from './plugins/errors.js';
import { metricsPlugin } from './plugins/metrics.js';
import { requestContextPlugin } from './plugins/request-context.js';
import { securityHeadersPlugin } from './plugins/security-headers.js';
import { pageContextPlugin } from './plugins/page-context.js';
import { AccessLog, loggerOptions, requestLogger } from './logging.js';
import { requestIdFor } from '#lib/logging/request-log.js';
import { collectDiscovery, type Collected } from './routes/discovery/metadata.js';
import { ROLLOUT_SCHEMAS } from './routes/rollout/schemas.js';
import { jsonBodyPlugin } from './plugins/json-body.js';
import { tracingPlugin } from './plugins/tracing.js';

type AreaPlugin = (app: FastifyInstance, collected: Collected) => Promise<void>;
/**
 * A route module, imported when its area is registered and not before: a process that builds a
 * few areas loads only their modules (docs/platform.md#test-tiers). `name` picks a plugin other
 * than the module's default export.
 */
type Load<K extends string> = () => Promise<{ [key in K]: FastifyPluginAsync }>;
/** A machine endpoint's plugin: registered as it is, with the app-wide hooks only. */
const machine =
  <K extends string = 'default'>(load: Load<NoInfer<K>>, name = 'default' as K): AreaPlugin =>
  async (app) => {
    await app.register((await load())[name]);
  };
/**
 * A plugin that serves a browser (pages, or JSON that a signed-in browser calls): registered in
 * an encapsulated context of its own with the page context (session cookie, page language), so
 * that those hooks run on its routes and on no machine endpoint's.
 */
const pages =
  <K extends string = 'default'>(load: Load<NoInfer<K>>, name = 'default' as K): AreaPlugin =>
  async (app) => {
    await app.register(inPageContext((await load())[name]));
  };

/** `plugin` inside an encapsulated context of its own that has the page context. */
export function inPageContext(plugin: FastifyPluginAsync): FastifyPluginAsync {
  return async (scope) => {
    await scope.register(pageContextPlugin);
    await scope.register(plugin);
  };
}

/**
 * The resource areas of the control plane, each the route plugins it registers. The whole app
 * registers every area in this order; a test that exercises one area builds only it (with the
 * shared infrastructure: errors, sessions, security headers, metrics, the OpenAPI document), which
 * skips loading every other area's modules and compiling their routes' schemas. Each plugin is a
 * machine endpoint's or a browser's (`machine` / `pages` above): the session and locale hooks live
 * only in the latter. What the app needs before any area (discovery's collector, the published
 * rollout schemas) lives in modules that load no routes.
 */
const AREAS = {
  health: [machine(() => import('./routes/health/index.js'))],
  discovery: [
    async (app, collected) => {
      await app.register((await import('./routes/discovery/index.js')).default, { collected });
    },
  ],
  docs: [pages(() => import('./routes/docs/index.js'))],
  pages: [pages(() => import('./routes/auth-page/index.js'))],
  totp: [pages(() => import('./routes/totp/index.js'))],
  recovery: [pages(() => import('./routes/recovery/index.js'))],
  email: [pages(() => import('./routes/email/index.js'))],
  magic: [pages(() => import('./routes/magic/index.js'))],
  assets: [pages(() => import('./routes/assets/index.js'))],
  passkeys: [pages(() => import('./routes/passkeys/index.js')), pages(() => import('./routes/step-up/index.js'))],
  account: [pages(() => import('./routes/accounts/index.js'))],
  admin: [pages(() => import('./routes/admin/index.js'))],
  // The export is read from the console too (an auditor's session): it needs the page context.
  receipts: [machine(() => import('./routes/receipts/index.js')), pages(() => import('./routes/receipts/export.js'))],
  clients: [pages(() => import('./routes/clients/index.js'))],
  connectors: [pages(() => import('./routes/connectors/index.js'))],
  oidc: [
    machine(() => import('./routes/oidc/index.js')),
    pages(() => import('./routes/oidc/index.js'), 'oidcPageRoutes'),
  ],
  gateway: [
    machine(() => import('./routes/managed-gateways/index.js')),
    pages(() => import('./routes/managed-gateways/index.js'), 'gatewayStatusRoutes'),
  ],
  fedcm: [pages(() => import('./routes/fedcm/index.js'))],
  agents: [
    pages(() => import('./routes/agents/index.js')),
    pages(() => import('./routes/agents/proof.js')),
    pages(() => import('./routes/agents/pages.js')),
  ],
  v1: [pages(() => import('./routes/v1/index.js'))],
  orgs: [pages(() => import('./routes/orgs/index.js'))],
  scan: [pages(() => import('./routes/scan/index.js'))],
  saml: [pages(() => import('./routes/saml/index.js')), pages(() => import('./routes/saml/apps-page.js'))],
  rollout: [pages(() => import('./routes/rollout/index.js'))],
  mcp: [
    async (app, collected) => {
      await app.register((await import('./routes/mcp/index.js')).default, { collected });
    },
  ],
  contact: [pages(() => import('./routes/contact/index.js'))],
  apis: [pages(() => import('./routes/apis/index.js'))],
  webhooks: [pages(() => import('./routes/webhooks/index.js'))],
  // The operator's API reads a console session too: it needs the page context.
  ssf: [machine(() => import('./routes/ssf/index.js')), pages(() => import('./routes/ssf/admin.js'))],
  scim: [machine(() => import('./routes/scim/index.js'))],
  console: [pages(() => import('./routes/console/index.js'))],
  federation: [pages(() => import('./routes/federation/index.js'))],
} satisfies Record<string, AreaPlugin[]>;

export type Area = keyof typeof AREAS;

/**
 * The trusted-proxy check, remembered per address: fastify asks it for every request's `ip`, and
 * a `BlockList` look-up builds a `SocketAddress` each time. Bounded, so that many addresses
 * cannot grow it without end.
 */
function rememberAnswers(check: (address: string) => boolean): (address: string) => boolean {
  const answers = new Map<string, boolean>();
  return (address) => {
    let answer = answers.get(address);
    if (answer === undefined) {
      if (answers.size >= 1024) answers.clear();
      answer = check(address);
      answers.set(address, answer);
    }
    return answer;
  };
}
export const ALL_AREAS = Object.keys(AREAS) as Area[];

export interface BuildOptions {
  serverFactory?: FastifyServerFactory;
  /** Replace the JSON log stream (tests pass a sink). */
  logStream?: NodeJS.WritableStream;
  /** Register only these resource areas (default: all). The services object is always whole. */
  areas?: readonly Area[];
}

/** Builds the control plane's HTTP application on already-opened services. */
export async function buildControlPlane(
  services: ControlPlaneServices,
  options: BuildOptions = {},
): Promise<FastifyInstance> {
  const { config } = services;
  const trusted = rememberAnswers(compileAddressList(config.http.trustedProxies));
  const accessLog = new AccessLog();
  const app = Fastify({
    logger: loggerOptions(config.logLevel, options.logStream),
    logController: accessLog,
    childLoggerFactory: requestLogger,
    bodyLimit: config.http.bodyLimit,
    trustProxy: (address: string) => trusted(address),
    // One id follows a request from a trusted proxy in front; anyone else's is replaced.
    genReqId: (req) => {
      const header = req.headers['x-request-id'];
      return requestIdFor(header, header !== undefined && trusted(req.socket.remoteAddress ?? ''));
    },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    schemaController: { compilersFactory: sharedSchemaCompilers },
    ...(options.serverFactory ? { serverFactory: options.serverFactory } : {}),
  });
  app.decorate('kp', services);
  accessLog.writeTo(app.log);
  // First, so that its hooks run before every other plugin's and their storage calls are in its span.
  if (services.tracing.enabled) await app.register(tracingPlugin, { tracing: services.tracing, trusted });

  // Only JSON and form bodies are understood; anything else is 415.
  app.removeContentTypeParser('text/plain');
  await app.register(jsonBodyPlugin);
  await app.register(formbody, { bodyLimit: config.http.bodyLimit });

  await app.register(requestContextPlugin);
  await app.register(errorsPlugin);
  await app.register(dependenciesPlugin);
  await app.register(securityHeadersPlugin, { https: config.issuer.startsWith('https://') });
  await app.register(metricsPlugin, { registry: services.metrics });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Keyplane',
        version: 'svc-api-1',
        description:
          'Passkey-first identity and security plane. Every failure is the envelope {ok:false, reason, message?}.',
      },
      servers: [{ url: config.issuer }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: config.issuer.startsWith('https://') ? '__Host-kp_session' : 'kp_session',
          },
          // The operator console's own session (docs/console.md).
          consoleCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: config.issuer.startsWith('https://') ? '__Host-kp_console' : 'kp_console',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });

  // The trust-profile and migration-plan schemas: one object validates them and is published here.
  for (const schema of ROLLOUT_SCHEMAS) app.addSchema(schema);
  const discovery = collectDiscovery(app);
  const chosen = new Set(options.areas ?? ALL_AREAS);
  for (const area of ALL_AREAS) {
    if (!chosen.has(area)) continue;
    for (const register of AREAS[area]) await register(app, discovery);
  }
  return app;
}
