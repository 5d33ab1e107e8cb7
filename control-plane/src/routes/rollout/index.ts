import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { presentsAdminToken, requireAdminToken } from '#lib/http/admin-token.js';
import { page } from '../../pages/layout.js';
import { rolloutTable } from '../../pages/rollout-page.js';
import { uiOf } from '../../pages/ui.js';
import { requireSession } from '../../plugins/session.js';
import { classifyDocument } from '../../rollout/documents.js';
import {
  attestProject,
  projectState,
  recordVerification,
  registerProject,
  startCanary,
  type RegisterInput,
  type VerificationCheck,
} from '../../rollout/projects.js';
import { consoleSessionOf } from '../../http/operator-access.js';
import { describeSlice, projectSliceOfClient, rolloutTruth, viewerOf, type Viewer } from '../../rollout/truth.js';
import { describeClient } from '../../clients/registration.js';
import { wantsJson } from '../../http/negotiate.js';
import { anyObject, errorResponses, okObject, receiptField } from '../../http/schemas.js';

const admin = [{ bearerAuth: [] }];
const adminOrSession: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { sessionCookie: [] }];
const projectParams = {
  type: 'object',
  required: ['project'],
  properties: { project: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,62}$' } },
} as const;
const revision = {
  type: 'integer',
  minimum: 1,
  description: 'The registration revision this change is based on; a stale one is refused with stale_revision.',
} as const;
const signedDocument = {
  type: 'object',
  properties: {
    version: { type: 'integer' },
    hash: { type: 'string' },
    signed_at: { type: 'string', format: 'date-time' },
    kid: { type: 'string' },
    jws: {
      type: 'string',
      description: 'Compact JWS (ES256, kid in the JWKS), typ project-trust-profile+jwt or migration-plan+jwt.',
    },
    document: { oneOf: [{ $ref: 'ProjectTrustProfile#' }, { $ref: 'MigrationPlan#' }] },
  },
} as const;
const rolloutRow = {
  type: 'object',
  required: ['project', 'client_id', 'stage', 'declared', 'observed', 'status', 'reason'],
  properties: {
    project: { type: 'string' },
    client_id: { type: ['string', 'null'] },
    stage: { enum: ['classified', 'registered', 'verified', 'canary', 'attested'] },
    declared: {
      ...anyObject,
      description: 'Declared intent: the signed profile and the policy mode the control plane issues.',
    },
    observed: {
      ...anyObject,
      description: "Live observation: the newest signed evidence of the project's gateways and its age.",
    },
    status: {
      enum: ['enforced', 'unverified', 'stale', 'mismatch'],
      description: '`enforced` only with fresh evidence of exactly the declared enforce config.',
    },
    reason: { type: 'string' },
  },
  additionalProperties: true,
} as const;
const sliceProperties = {
  ...rolloutRow.properties,
  profile: signedDocument,
  plan: { oneOf: [signedDocument, { type: 'null' }] },
  registration: { type: ['object', 'null'], additionalProperties: true },
  gateway_policy: { type: ['object', 'null'], additionalProperties: true },
  evidence: { type: 'array', items: anyObject },
  verification: { type: ['object', 'null'], additionalProperties: true },
  attestation: { type: ['object', 'null'], additionalProperties: true },
};
const slice = okObject(sliceProperties, [...rolloutRow.required]);
/** The slice inside another answer (register, canary, attest). */
const nestedSlice = {
  type: 'object',
  required: [...rolloutRow.required],
  properties: sliceProperties,
  additionalProperties: true,
} as const;

/**
 * The rollout (docs/rollout.md): the operator's steps under the admin token, `/rollout` and the
 * project slices for the operator, the client's owner and the profile's org admins.
 */
export default async function rolloutRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;

  /** The admin token makes the operator; otherwise a session, the operator's with a console session. */
  const viewer = async (request: FastifyRequest): Promise<Viewer> => {
    if (presentsAdminToken(services.config.adminToken, request.headers.authorization)) return { operator: true };
    return viewerOf(request.kp.session!.identityId, await consoleSessionOf(services, request));
  };
  const sessionUnlessToken = async (request: FastifyRequest, reply: FastifyReply) =>
    request.headers.authorization === undefined ? requireSession(request, reply) : undefined;

  app.get(
    '/rollout',
    {
      preHandler: sessionUnlessToken,
      schema: {
        tags: ['rollout'],
        summary:
          'Rollout truth: every project the caller may see, declared and observed apart (HTML table, or JSON with format=json)',
        security: adminOrSession,
        querystring: { type: 'object', properties: { format: { enum: ['json', 'html'] } } },
        response: {
          200: okObject({ projects: { type: 'array', items: rolloutRow } }, ['projects']),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const projects = await rolloutTruth(services, await viewer(request));
      if (wantsJson(request)) return { ok: true, projects };
      reply.type('text/html; charset=utf-8');
      const ui = uiOf(request);
      return page({
        title: ui.t('rollout.title'),
        nonce: request.kp.cspNonce,
        ui,
        body: rolloutTable(ui, projects, request.kp.cspNonce),
      });
    },
  );

  app.get<{ Params: { client_id: string } }>(
    '/projects/:client_id/profile',
    {
      preHandler: sessionUnlessToken,
      schema: {
        tags: ['rollout'],
        summary:
          "A project's slice: signed profile, registration, gateway policy, evidence and enforcement status (operator, client owner or the profile org's admins)",
        security: adminOrSession,
        params: {
          type: 'object',
          required: ['client_id'],
          properties: { client_id: { type: 'string', minLength: 1, maxLength: 100 } },
        },
        response: { 200: slice, ...errorResponses },
      },
    },
    async (request) => ({
      ok: true,
      ...(await projectSliceOfClient(services, await viewer(request), request.params.client_id)),
    }),
  );

  await app.register(async (operator) => {
    operator.addHook('onRequest', async (request) =>
      requireAdminToken(services.config.adminToken, request.headers.authorization),
    );

    operator.post(
      '/rollout/documents',
      {
        schema: {
          tags: ['rollout'],
          summary:
            "Classify: validate a trust profile or migration plan (YAML, JSON, or a JWS this control plane signed) and sign it as the project's next version",
          security: admin,
          body: {
            type: 'object',
            required: ['document'],
            properties: {
              document: {
                oneOf: [
                  { type: 'string', maxLength: 65_536, description: 'YAML or JSON text, or a compact JWS signed here' },
                  { type: 'object' },
                ],
              },
            },
          },
          response: {
            200: okObject(
              {
                kind: { enum: ['profile', 'plan'] },
                project: { type: 'string' },
                version: { type: 'integer' },
                created: { type: 'boolean' },
                hash: { type: 'string' },
                jws: { type: 'string' },
                receipt: receiptField,
              },
              ['kind', 'project', 'version', 'created', 'jws'],
            ),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const { document } = request.body as { document: unknown };
        const result = await classifyDocument(
          services,
          typeof document === 'string' ? { text: document } : { document },
        );
        const stored = result.document;
        return {
          ok: true,
          kind: stored.kind,
          project: stored.project,
          version: stored.version,
          created: result.created,
          hash: stored.hash,
          jws: stored.jws,
          ...(result.receipt ? { receipt: result.receipt } : {}),
        };
      },
    );

    operator.get<{ Params: { project: string } }>(
      '/rollout/projects/:project',
      {
        schema: {
          tags: ['rollout'],
          summary: "The project's slice by project name (what the rollout CLI reads)",
          security: admin,
          params: projectParams,
          response: { 200: slice, ...errorResponses },
        },
      },
      async (request) => ({ ok: true, ...describeSlice(await projectState(services, request.params.project)) }),
    );

    operator.post<{ Params: { project: string }; Body: RegisterInput }>(
      '/rollout/projects/:project/register',
      {
        schema: {
          tags: ['rollout'],
          summary:
            "Register the project's client from its newest signed profile (idempotent: an existing client is returned, no secret is issued again)",
          security: admin,
          params: projectParams,
          body: {
            type: 'object',
            additionalProperties: false,
            properties: {
              profile: {
                type: 'string',
                maxLength: 65_536,
                description:
                  'The signed profile (compact JWS) the operator holds; it must be the newest version signed here',
              },
              environments: { type: 'array', maxItems: 10, items: { type: 'string' } },
              redirect_uris: { type: 'array', maxItems: 20, items: { type: 'string' } },
              resources: { type: 'array', maxItems: 20, items: { type: 'string' } },
              client_name: { type: 'string', maxLength: 200 },
              routes: { type: 'array', maxItems: 200, items: anyObject },
            },
          },
          response: {
            200: okObject(
              { created: { type: 'boolean' }, client: anyObject, project: nestedSlice, receipt: receiptField },
              ['created', 'client', 'project'],
            ),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const result = await registerProject(services, request.params.project, request.body ?? {});
        const client = result.change
          ? describeClient(app.kp, result.change.client, result.change.issued)
          : describeClient(app.kp, result.state.client!);
        return {
          ok: true,
          created: result.created,
          client,
          project: describeSlice(result.state),
          ...(result.change?.receipt ? { receipt: result.change.receipt } : {}),
        };
      },
    );

    operator.post<{ Params: { project: string }; Body: { checks: VerificationCheck[] } }>(
      '/rollout/projects/:project/verifications',
      {
        schema: {
          tags: ['rollout'],
          summary:
            "Record a verification: the caller's live checks (discovery, redirect URIs, PKCE) joined by the control plane's own (registration, evidence)",
          security: admin,
          params: projectParams,
          body: {
            type: 'object',
            required: ['checks'],
            additionalProperties: false,
            properties: {
              checks: {
                type: 'array',
                maxItems: 50,
                items: {
                  type: 'object',
                  required: ['name', 'ok', 'detail'],
                  additionalProperties: false,
                  properties: {
                    name: {
                      type: 'string',
                      maxLength: 2100,
                      pattern: '^[a-z_]{1,40}(:\\S{1,2000})?$',
                      description: 'A check, optionally with its subject: `pkce`, `redirect_uri:<uri>`',
                    },
                    ok: { type: 'boolean' },
                    detail: { type: 'string', maxLength: 1000 },
                  },
                },
              },
            },
          },
          response: {
            200: okObject(
              { passed: { type: 'boolean' }, checks: { type: 'array', items: anyObject }, receipt: receiptField },
              ['passed', 'checks'],
            ),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const { verification, receipt } = await recordVerification(
          services,
          request.params.project,
          request.body.checks,
        );
        return { ok: true, passed: verification.passed, checks: verification.checks, ...(receipt ? { receipt } : {}) };
      },
    );

    operator.post<{ Params: { project: string }; Body: { percent: number; revision?: number } }>(
      '/rollout/projects/:project/canary',
      {
        schema: {
          tags: ['rollout'],
          summary:
            'Canary: enforce the gateway policy for a stable share of sessions, through the registration revision',
          security: admin,
          params: projectParams,
          body: {
            type: 'object',
            required: ['percent'],
            additionalProperties: false,
            properties: { percent: { type: 'integer', minimum: 0, maximum: 100 }, revision },
          },
          response: {
            200: okObject({ changed: { type: 'boolean' }, project: nestedSlice, receipt: receiptField }, [
              'changed',
              'project',
            ]),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const result = await startCanary(services, request.params.project, request.body.percent, request.body.revision);
        return {
          ok: true,
          changed: result.changed,
          project: describeSlice(result.state),
          ...(result.receipt ? { receipt: result.receipt } : {}),
        };
      },
    );

    operator.post<{ Params: { project: string }; Body: { revision?: number } | undefined }>(
      '/rollout/projects/:project/attest',
      {
        schema: {
          tags: ['rollout'],
          summary:
            'Attest: after a passing verify and with fresh matching evidence, move the policy to enforce and sign an attestation (typ rollout-attestation+jwt)',
          security: admin,
          params: projectParams,
          body: { type: 'object', additionalProperties: false, properties: { revision } },
          response: {
            200: okObject(
              {
                changed: { type: 'boolean' },
                attestation: { type: 'string', description: 'Compact JWS' },
                project: nestedSlice,
                receipt: receiptField,
              },
              ['changed', 'attestation', 'project'],
            ),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const result = await attestProject(services, request.params.project, request.body?.revision);
        return {
          ok: true,
          changed: result.changed,
          attestation: result.attestation.jws,
          project: describeSlice(result.state),
          ...(result.receipt ? { receipt: result.receipt } : {}),
        };
      },
    );
  });
}
