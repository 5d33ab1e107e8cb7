import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import type { IssuedGatewayConfig, StoredGatewayEvidence } from '../../storage/interface.js';
import { authenticateRegistrar } from '../../clients/registration.js';
import { authenticateClient } from '../../clients/authenticate-client.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import { acceptEvidence, enforcementOf } from '../../managed-gateways/evidence.js';
import { currentGatewayConfig, registerGatewayDirectoryMetrics } from '../../managed-gateways/issue-config.js';

/** A report is a small JWS; anything larger is not one. */
const EVIDENCE_BODY_LIMIT = 16 * 1024;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const hex64 = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const;
const time = { type: 'string', format: 'date-time' } as const;
const heldConfig = {
  type: ['object', 'null'],
  required: ['version', 'hash', 'mode'],
  properties: { version: { type: 'integer' }, hash: hex64, mode: { enum: ['observe', 'canary', 'enforce'] } },
} as const;
const countMap = { type: 'object', additionalProperties: { type: 'integer' } } as const;

const statusResponse = okObject(
  {
    client_id: { type: 'string' },
    status: { enum: ['green', 'stale', 'unknown'] },
    reason: { type: 'string' },
    declared: {
      type: ['object', 'null'],
      description: 'The newest config issued to the client (declared intent).',
      properties: {
        version: { type: 'integer' },
        hash: hex64,
        mode: { enum: ['observe', 'canary', 'enforce'] },
        canary_percent: { type: 'integer' },
        routes: { type: 'array', items: { type: 'object', additionalProperties: true } },
        issued_at: time,
        expires_at: time,
      },
    },
    observed: {
      type: 'array',
      description: 'The newest signed evidence of each gateway instance (live observation).',
      items: {
        type: 'object',
        properties: {
          instance: { type: 'string' },
          gateway: { type: 'string' },
          received_at: time,
          issued_at: time,
          expires_at: time,
          fresh: { type: 'boolean' },
          config: heldConfig,
          counts: {
            type: 'object',
            properties: { allowed: { type: 'integer' }, refused: countMap, observed: countMap },
          },
          last_enforcement_at: { type: ['string', 'null'], format: 'date-time' },
          started_at: time,
          key_thumbprint: { type: 'string' },
        },
      },
    },
  },
  ['client_id', 'status', 'reason', 'declared', 'observed'],
);

function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  // RFC 9110 §13.1.2: If-None-Match compares weakly, and `*` matches any current representation.
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag.replace(/^W\//, '') === etag;
  });
}

function describeDeclared(issued: IssuedGatewayConfig | null) {
  if (!issued) return null;
  return {
    version: issued.version,
    hash: issued.hash,
    mode: issued.policy.mode,
    ...(issued.policy.canary_percent !== undefined ? { canary_percent: issued.policy.canary_percent } : {}),
    routes: issued.policy.routes,
    issued_at: iso(issued.issuedAt),
    expires_at: iso(issued.expiresAt),
  };
}

function describeObserved(report: StoredGatewayEvidence, now: number) {
  return {
    instance: report.instance,
    gateway: report.gateway,
    received_at: iso(report.receivedAt),
    issued_at: iso(report.issuedAt),
    expires_at: iso(report.expiresAt),
    fresh: now < report.expiresAt,
    config: report.config,
    counts: report.counts,
    last_enforcement_at: iso(report.lastEnforcementAt),
    started_at: iso(report.startedAt),
    key_thumbprint: report.keyThumbprint,
  };
}

async function requireJwtBody(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/jwt')
    throw fail('unsupported_media_type', 'send the evidence as Content-Type: application/jwt');
}

/**
 * The gateway's side of the control plane (docs/gateway.md#signed-config, docs/gateway.md#evidence): a gateway, authenticated as its
 * OIDC client (RFC 6749 §2.3.1 Basic), pulls its signed config and pushes signed evidence; the
 * client's owner or the operator reads whether the policy is enforced. Declared configs and
 * observed evidence are stored apart and only compared when read.
 */
export default async function gatewayRoutes(app: FastifyInstance): Promise<void> {
  registerGatewayDirectoryMetrics(app.kp.metrics);
  // Scoped to this plugin: nowhere else takes a bare JWS as a body.
  app.addContentTypeParser(
    'application/jwt',
    { parseAs: 'string', bodyLimit: EVIDENCE_BODY_LIMIT },
    (_request, body, done) => done(null, body),
  );

  // Every gateway asks every 2 s and reports every 10 s: routine traffic is logged only when it goes wrong.
  app.get(
    '/gateway/config',
    {
      logLevel: 'warn',
      schema: {
        tags: ['gateway'],
        summary:
          'The signed config of the gateway client (client_secret_basic) (compact JWS, typ keyplane-gateway-config+jwt); 304 for a matching If-None-Match',
        produces: ['application/jwt'],
        response: {
          200: {
            type: 'string',
            description: 'Compact JWS (ES256, kid in the JWKS): {iss, aud = client_id, iat, exp, version, gateway}',
          },
          304: { type: 'null', description: 'The config named by If-None-Match is still the current one' },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const client = await authenticateClient(app.kp, request.headers.authorization, {});
      const issued = await currentGatewayConfig(app.kp, client);
      const etag = `"${issued.hash}"`;
      reply.header('etag', etag).header('cache-control', 'no-store');
      if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
      return reply.type('application/jwt').send(issued.jws);
    },
  );

  app.post(
    '/gateway/evidence',
    {
      logLevel: 'warn',
      onRequest: requireJwtBody,
      schema: {
        tags: ['gateway'],
        summary:
          'Signed evidence from a gateway instance, as its client (client_secret_basic; compact JWS, typ keyplane-gateway-evidence+jwt, its key in the header)',
        consumes: ['application/jwt'],
        body: { type: 'string', maxLength: EVIDENCE_BODY_LIMIT },
        response: { 202: okObject(), ...errorResponses },
      },
    },
    async (request, reply) => {
      const client = await authenticateClient(app.kp, request.headers.authorization, {});
      await acceptEvidence(app.kp, client, (request.body as string).trim());
      reply.code(202);
      return { ok: true };
    },
  );
}

/**
 * Whether a client's gateway policy is enforced, for its owner (session) or the operator: beside
 * the gateway's machine endpoints, but in the page context (app.ts), since it reads the session.
 */
export async function gatewayStatusRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { client_id: string } }>(
    '/gateway/status/:client_id',
    {
      schema: {
        tags: ['gateway'],
        summary:
          "Whether the client's gateway policy is enforced: declared config next to each instance's evidence (admin token or the owner's session)",
        security: [{ bearerAuth: [] }, { sessionCookie: [] }],
        params: {
          type: 'object',
          required: ['client_id'],
          properties: { client_id: { type: 'string', minLength: 1, maxLength: 100 } },
        },
        response: { 200: statusResponse, ...errorResponses },
      },
    },
    async (request) => {
      const registrar = authenticateRegistrar(app.kp, request.headers.authorization, request.kp.session);
      const { client, status, reason, declared, observed, now } = await enforcementOf(
        app.kp,
        registrar,
        request.params.client_id,
      );
      return {
        ok: true,
        client_id: client.clientId,
        status,
        reason,
        declared: describeDeclared(declared),
        observed: observed.map((report) => describeObserved(report, now)),
      };
    },
  );
}
