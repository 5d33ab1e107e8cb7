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
import { AccessLog, loggerOptions } from './logging.js';
import { requestIdFor } from '#lib/logging/request-log.js';
import authPageRoutes from './routes/auth-page/index.js';
import accountRoutes from './routes/accounts/index.js';
import adminRoutes from './routes/admin/index.js';
import assetRoutes from './routes/assets/index.js';
import passkeyRoutes from './routes/passkeys/index.js';
import stepUpRoutes from './routes/step-up/index.js';
import discoveryRoutes, { collectDiscovery } from './routes/discovery/index.js';
import docsRoutes from './routes/docs/index.js';
import healthRoutes from './routes/health/index.js';
import clientRoutes from './routes/clients/index.js';
import connectorRoutes from './routes/connectors/index.js';
import totpRoutes from './routes/totp/index.js';
import recoveryRoutes from './routes/recovery/index.js';
import emailRoutes from './routes/email/index.js';
import magicRoutes from './routes/magic/index.js';
import receiptRoutes from './routes/receipts/index.js';
import oidcRoutes, { oidcPageRoutes } from './routes/oidc/index.js';
import gatewayRoutes, { gatewayStatusRoutes } from './routes/managed-gateways/index.js';
import fedcmRoutes from './routes/fedcm/index.js';
import agentRoutes from './routes/agents/index.js';
import agentProofRoutes from './routes/agents/proof.js';
import agentPages from './routes/agents/pages.js';
import v1Routes from './routes/v1/index.js';
import orgRoutes from './routes/orgs/index.js';
import scanRoutes from './routes/scan/index.js';
import samlRoutes from './routes/saml/index.js';
import samlPages from './routes/saml/apps-page.js';
import rolloutRoutes, { ROLLOUT_SCHEMAS } from './routes/rollout/index.js';
import mcpRoutes from './routes/mcp/index.js';
import contactRoutes from './routes/contact/index.js';
import { acceptEmptyJsonOnBodilessMethods } from './http/json-body.js';

type Collected = ReturnType<typeof collectDiscovery>;
type AreaPlugin = (app: FastifyInstance, collected: Collected) => PromiseLike<unknown>;
/** A machine endpoint's plugin: registered as it is, with the app-wide hooks only. */
const machine =
  (plugin: FastifyPluginAsync): AreaPlugin =>
  (app) =>
    app.register(plugin);
/**
 * A plugin that serves a browser (pages, or JSON that a signed-in browser calls): registered in
 * an encapsulated context of its own with the page context (session cookie, page language), so
 * that those hooks run on its routes and on no machine endpoint's.
 */
const pages =
  (plugin: FastifyPluginAsync): AreaPlugin =>
  (app) =>
    app.register(inPageContext(plugin));

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
 * skips compiling the schemas of every other route. Each plugin is a machine endpoint's or a
 * browser's (`machine` / `pages` above): the session and locale hooks live only in the latter.
 */
const AREAS = {
  health: [machine(healthRoutes)],
  discovery: [(app, collected) => app.register(discoveryRoutes, { collected })],
  docs: [pages(docsRoutes)],
  pages: [pages(authPageRoutes)],
  totp: [pages(totpRoutes)],
  recovery: [pages(recoveryRoutes)],
  email: [pages(emailRoutes)],
  magic: [pages(magicRoutes)],
  assets: [pages(assetRoutes)],
  passkeys: [pages(passkeyRoutes), pages(stepUpRoutes)],
  account: [pages(accountRoutes)],
  admin: [pages(adminRoutes)],
  receipts: [machine(receiptRoutes)],
  clients: [pages(clientRoutes)],
  connectors: [pages(connectorRoutes)],
  oidc: [machine(oidcRoutes), pages(oidcPageRoutes)],
  gateway: [machine(gatewayRoutes), pages(gatewayStatusRoutes)],
  fedcm: [pages(fedcmRoutes)],
  agents: [pages(agentRoutes), pages(agentProofRoutes), pages(agentPages)],
  v1: [pages(v1Routes)],
  orgs: [pages(orgRoutes)],
  scan: [pages(scanRoutes)],
  saml: [pages(samlRoutes), pages(samlPages)],
  rollout: [pages(rolloutRoutes)],
  mcp: [(app, collected) => app.register(mcpRoutes, { collected })],
  contact: [pages(contactRoutes)],
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

  // Only JSON and form bodies are understood; anything else is 415.
  app.removeContentTypeParser('text/plain');
  acceptEmptyJsonOnBodilessMethods(app);
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
