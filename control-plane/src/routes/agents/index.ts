import type { FastifyInstance } from 'fastify';
import { enforceLimit, retryAfterSeconds } from '#lib/errors/rate-limited.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import {
  approveEnrollment,
  beginEnrollment,
  completeEnrollment,
  enrollmentStatus,
  proofUrl,
} from '../../agents/enrollment.js';
import { discoverA2aCard } from '../../agents/a2a.js';
import { dnsChallenge, dnsVerify } from '../../agents/dns.js';
import { approveAgentGrant, revokeAgentGrant } from '../../agents/grants.js';
import {
  acceptTransfer,
  beginTransfer,
  changeAgentState,
  rotateAgentKey,
  setAgentVisibility,
} from '../../agents/lifecycle.js';
import { requireAssurance, requireSession } from '../../plugins/session.js';
import type { AgentVisibility, SubjectKind } from '../../storage/interface.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import {
  agentId,
  agentState,
  code,
  enrollmentId,
  keyProofOf,
  publicJwk,
  rfc3339,
  SUBJECT_KINDS,
  VISIBILITIES,
} from './schemas.js';

const session = [{ sessionCookie: [] }];
const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Agent enrollment and management (docs/agents.md). Enrollment begin, complete and status are
 * public (the agent has no session, it proves its key); everything else needs the owner's session.
 */
export default async function agentRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const limiter = new RateLimiter(services.state);

  async function limit(bucket: string, subject: string, max: number): Promise<void> {
    const decision = await limiter.hit(bucket, subject, { max, windowMs: 60_000 });
    enforceLimit(decision, `too many requests; try again in ${retryAfterSeconds(decision.retryAfterMs)} s`);
  }

  app.post(
    '/auth/agents/proof/enroll/begin',
    {
      schema: {
        tags: ['agents'],
        summary: 'Start enrolling an agent key: returns the owner code the owner types on /account/agents',
        body: {
          type: 'object',
          required: ['name', 'subjectKind', 'publicJwk'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 100 },
            subjectKind: { enum: SUBJECT_KINDS },
            publicJwk,
            visibility: { enum: VISIBILITIES },
          },
        },
        response: {
          200: okObject(
            {
              enrollment_id: enrollmentId,
              owner_code: { type: 'string', pattern: '^[A-Z2-9]{4}-[A-Z2-9]{4}$' },
              expires_at: rfc3339,
              receipt: receiptField,
            },
            ['enrollment_id', 'owner_code', 'expires_at'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      await limit('agents:begin', request.ip, services.config.limits.authPerAccountPerMinute);
      const body = request.body as {
        name: string;
        subjectKind: SubjectKind;
        publicJwk: unknown;
        visibility?: AgentVisibility;
      };
      const begun = await beginEnrollment(services, body);
      return {
        ok: true,
        enrollment_id: begun.enrollmentId,
        owner_code: begun.ownerCode,
        expires_at: iso(begun.expiresAt),
        ...(begun.receipt ? { receipt: begun.receipt } : {}),
      };
    },
  );

  app.post(
    '/auth/agents/proof/enroll/status',
    {
      schema: {
        tags: ['agents'],
        summary: 'Poll an enrollment: its state and expiry only, nothing about the owner',
        body: {
          type: 'object',
          required: ['enrollment_id'],
          additionalProperties: false,
          properties: { enrollment_id: enrollmentId },
        },
        response: {
          200: {
            type: 'object',
            required: ['ok', 'status', 'expires_at'],
            additionalProperties: false,
            properties: {
              ok: { const: true },
              status: { enum: ['pending_approval', 'approved', 'completed', 'expired'] },
              expires_at: rfc3339,
            },
          },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      await limit('agents:status', request.ip, services.config.limits.authPerIpPerMinute);
      const status = await enrollmentStatus(services, (request.body as { enrollment_id: string }).enrollment_id);
      return { ok: true, status: status.status, expires_at: iso(status.expiresAt!) };
    },
  );

  app.post(
    '/auth/agents/proof/enroll/complete',
    {
      schema: {
        tags: ['agents'],
        summary:
          'Finish an approved enrollment with a nonce-bound DPoP proof by the enrolled key (first call: 401 use_dpop_nonce with DPoP-Nonce)',
        headers: {
          type: 'object',
          properties: {
            dpop: { type: 'string', description: 'RFC 9449 proof by the enrolled key carrying the server nonce' },
          },
        },
        body: {
          type: 'object',
          required: ['enrollment_id'],
          additionalProperties: false,
          properties: { enrollment_id: enrollmentId },
        },
        response: {
          200: okObject(
            { agent_id: agentId, proof_id: { type: 'string' }, proof_url: { type: 'string' }, receipt: receiptField },
            ['agent_id', 'proof_id', 'proof_url'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      await limit('agents:complete', request.ip, services.config.limits.authPerIpPerMinute);
      const { agent, receipt } = await completeEnrollment(
        services,
        { enrollmentId: (request.body as { enrollment_id: string }).enrollment_id },
        keyProofOf(request, '/auth/agents/proof/enroll/complete'),
      );
      return {
        ok: true,
        agent_id: agent.agentId,
        proof_id: agent.proofId,
        proof_url: proofUrl(services, agent.proofId),
        ...(receipt ? { receipt } : {}),
      };
    },
  );

  await app.register(async (owner) => {
    owner.addHook('onRequest', requireSession);

    owner.post(
      '/auth/agents/proof/enroll/approve',
      {
        onRequest: requireAssurance('passkey'),
        schema: {
          tags: ['agents'],
          summary: 'The owner approves an enrollment by typing its owner code (session at passkey or above)',
          security: session,
          body: {
            type: 'object',
            required: ['enrollment_id', 'owner_code'],
            additionalProperties: false,
            properties: { enrollment_id: enrollmentId, owner_code: code },
          },
          response: { 200: okObject({ status: { const: 'approved' }, receipt: receiptField }), ...errorResponses },
        },
      },
      async (request) => {
        const current = request.kp.session!;
        await limit('agents:approve', current.identityId, services.config.limits.authPerAccountPerMinute);
        const body = request.body as { enrollment_id: string; owner_code: string };
        const { receipt } = await approveEnrollment(services, current, {
          enrollmentId: body.enrollment_id,
          ownerCode: body.owner_code,
        });
        return { ok: true, status: 'approved', ...(receipt ? { receipt } : {}) };
      },
    );

    owner.post(
      '/auth/agents/proof/lifecycle',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary:
            'Suspend, resume, mark compromised or revoke an agent; leaving active stops its grants and tokens. A resume after a transfer or compromise recovery needs sensitive plus a DPoP proof by the agent key',
          headers: { type: 'object', properties: { dpop: { type: 'string' } } },
          body: {
            type: 'object',
            required: ['agent_id', 'action'],
            additionalProperties: false,
            properties: { agent_id: agentId, action: { enum: ['suspend', 'resume', 'mark_compromised', 'revoke'] } },
          },
          response: { 200: okObject({ state: agentState, receipt: receiptField }, ['state']), ...errorResponses },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; action: 'suspend' | 'resume' | 'mark_compromised' | 'revoke' };
        const result = await changeAgentState(
          services,
          request.kp.session!,
          { agentId: body.agent_id, action: body.action },
          keyProofOf(request, '/auth/agents/proof/lifecycle'),
        );
        return { ok: true, ...result };
      },
    );

    owner.post(
      '/auth/agents/proof/key-rotate',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary:
            'Rotate the agent key: a DPoP proof by the current key (active, suspended), or a sensitive step-up for a compromised agent, which then becomes suspended',
          headers: { type: 'object', properties: { dpop: { type: 'string' } } },
          body: {
            type: 'object',
            required: ['agent_id', 'publicJwk'],
            additionalProperties: false,
            properties: { agent_id: agentId, publicJwk },
          },
          response: {
            200: okObject({ state: agentState, jkt: { type: 'string' }, receipt: receiptField }, ['state', 'jkt']),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; publicJwk: unknown };
        return {
          ok: true,
          ...(await rotateAgentKey(
            services,
            request.kp.session!,
            { agentId: body.agent_id, publicJwk: body.publicJwk },
            keyProofOf(request, '/auth/agents/proof/key-rotate'),
          )),
        };
      },
    );

    owner.post(
      '/auth/agents/proof/transfer/begin',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary: 'Start handing an agent to one named owner: suspends it and returns a short transfer code',
          body: {
            type: 'object',
            required: ['agent_id', 'to'],
            additionalProperties: false,
            properties: {
              agent_id: agentId,
              to: { type: 'string', minLength: 1, maxLength: 100, description: 'username or identityId' },
            },
          },
          response: {
            200: okObject({ transfer_code: { type: 'string' }, expires_at: rfc3339, receipt: receiptField }, [
              'transfer_code',
              'expires_at',
            ]),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; to: string };
        const begun = await beginTransfer(services, request.kp.session!, { agentId: body.agent_id, to: body.to });
        return {
          ok: true,
          transfer_code: begun.transferCode,
          expires_at: iso(begun.expiresAt),
          ...(begun.receipt ? { receipt: begun.receipt } : {}),
        };
      },
    );

    owner.post(
      '/auth/agents/proof/transfer/accept',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary:
            'The named owner accepts a transfer with a fresh agent key; the agent stays suspended until resumed with sensitive plus the new key',
          body: {
            type: 'object',
            required: ['agent_id', 'transfer_code', 'publicJwk'],
            additionalProperties: false,
            properties: { agent_id: agentId, transfer_code: code, publicJwk },
          },
          response: {
            200: okObject({ state: agentState, jkt: { type: 'string' }, receipt: receiptField }, ['state']),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; transfer_code: string; publicJwk: unknown };
        return {
          ok: true,
          ...(await acceptTransfer(services, request.kp.session!, {
            agentId: body.agent_id,
            transferCode: body.transfer_code,
            publicJwk: body.publicJwk,
          })),
        };
      },
    );

    owner.post(
      '/auth/agents/proof/visibility',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary: 'Set the Proof Link visibility (private, unlisted, public); needs sensitive',
          body: {
            type: 'object',
            required: ['agent_id', 'visibility'],
            additionalProperties: false,
            properties: { agent_id: agentId, visibility: { enum: VISIBILITIES } },
          },
          response: {
            200: okObject({ visibility: { enum: VISIBILITIES }, receipt: receiptField }, ['visibility']),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; visibility: AgentVisibility };
        return {
          ok: true,
          ...(await setAgentVisibility(services, request.kp.session!, {
            agentId: body.agent_id,
            visibility: body.visibility,
          })),
        };
      },
    );
    const dnsBody = {
      type: 'object',
      required: ['agent_id', 'domain'],
      additionalProperties: false,
      properties: { agent_id: agentId, domain: { type: 'string', minLength: 3, maxLength: 253 } },
    } as const;
    owner.post(
      '/auth/agents/proof/dns-challenge',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary: 'The TXT record proving domain control: the same value for the same agent and domain',
          body: dnsBody,
          response: {
            200: okObject({ name: { type: 'string' }, type: { const: 'TXT' }, value: { type: 'string' } }, [
              'name',
              'type',
              'value',
            ]),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; domain: string };
        return {
          ok: true,
          ...(await dnsChallenge(services, request.kp.session!, { agentId: body.agent_id, domain: body.domain })),
        };
      },
    );

    owner.post(
      '/auth/agents/proof/dns-verify',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary:
            'Resolve _svc-agent.<domain> through the configured resolvers; on a match append domain-control evidence',
          body: dnsBody,
          response: {
            200: okObject({ evidence: { type: 'object', additionalProperties: true }, receipt: receiptField }, [
              'evidence',
            ]),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; domain: string };
        await limit('agents:dns', request.kp.session!.identityId, services.config.limits.authPerAccountPerMinute);
        return {
          ok: true,
          ...(await dnsVerify(services, request.kp.session!, { agentId: body.agent_id, domain: body.domain })),
        };
      },
    );

    owner.post(
      '/auth/agents/proof/a2a-discover',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary:
            "Fetch the agent's A2A card (https only, every resolved address and redirect checked, 128 KB, 5 s, no credentials); append descriptor-integrity evidence and fill the declared card URL and capabilities where empty",
          body: {
            type: 'object',
            required: ['agent_id', 'url'],
            additionalProperties: false,
            properties: {
              agent_id: agentId,
              url: { type: 'string', minLength: 9, maxLength: 2000, description: 'https URL of the agent card' },
            },
          },
          response: {
            200: okObject(
              {
                evidence: {
                  type: 'object',
                  required: ['type', 'url', 'sha256', 'fetched_at', 'expires_at'],
                  additionalProperties: false,
                  properties: {
                    type: { const: 'descriptor-integrity' },
                    url: { type: 'string' },
                    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
                    fetched_at: rfc3339,
                    expires_at: rfc3339,
                  },
                },
                declared: {
                  type: 'object',
                  additionalProperties: false,
                  properties: {
                    a2aCardUrl: { type: 'string' },
                    capabilities: { type: 'array', items: { type: 'string' } },
                  },
                },
                receipt: receiptField,
              },
              ['evidence', 'declared'],
            ),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; url: string };
        await limit('agents:a2a', request.kp.session!.identityId, services.config.limits.authPerAccountPerMinute);
        return {
          ok: true,
          ...(await discoverA2aCard(services, request.kp.session!, { agentId: body.agent_id, url: body.url })),
        };
      },
    );

    owner.post(
      '/auth/agents/proof/grants',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary:
            'Approve one scoped runtime credential for an agent at a client that admits agents (OIDC rule 8); needs sensitive',
          body: {
            type: 'object',
            required: ['agent_id', 'client_id', 'scope'],
            additionalProperties: false,
            properties: {
              agent_id: agentId,
              client_id: { type: 'string', minLength: 1, maxLength: 100 },
              resource: { type: 'string', minLength: 1, maxLength: 2000 },
              scope: { type: 'string', minLength: 1, maxLength: 1000 },
            },
          },
          response: {
            200: okObject({ grant_id: { type: 'string' }, receipt: receiptField }, ['grant_id']),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const body = request.body as { agent_id: string; client_id: string; resource?: string; scope: string };
        const approved = await approveAgentGrant(services, request.kp.session!, {
          agentId: body.agent_id,
          clientId: body.client_id,
          scope: body.scope,
          ...(body.resource ? { resource: body.resource } : {}),
        });
        return { ok: true, grant_id: approved.grantId, ...(approved.receipt ? { receipt: approved.receipt } : {}) };
      },
    );

    owner.post(
      '/auth/agents/proof/grants/revoke',
      {
        schema: {
          tags: ['agents'],
          security: session,
          summary: 'Revoke an agent grant; tokens issued under it stop at once',
          body: {
            type: 'object',
            required: ['grant_id'],
            additionalProperties: false,
            properties: { grant_id: { type: 'string', pattern: '^agg_[A-Za-z0-9_-]{1,64}$' } },
          },
          response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
        },
      },
      async (request) => ({
        ok: true,
        ...(await revokeAgentGrant(services, request.kp.session!, (request.body as { grant_id: string }).grant_id)),
      }),
    );
  });
}
