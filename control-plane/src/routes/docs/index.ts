import type { FastifyInstance } from 'fastify';
import { html, page } from '../../pages/layout.js';
import { anyObject, errorResponses } from '../../http/schemas.js';
import { CHANGELOG_FORMAT, changelog } from './changelog-entries.js';

interface OpenApiDocument {
  paths?: Record<string, Record<string, { summary?: string; security?: Array<Record<string, unknown>>; tags?: string[] }>>;
}

const HTTP_METHODS = ['get', 'post', 'put', 'delete', 'patch'];

/** The agent introspection document is derived from the OpenAPI description, so it lists exactly the live routes. */
export function describeSurfaces(doc: OpenApiDocument): { read: unknown[]; actions: unknown[] } {
  const read: unknown[] = [];
  const actions: unknown[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      const auth = op.security?.length ? Object.keys(op.security[0] ?? {}) : ['none'];
      const entry = { method: method.toUpperCase(), path, summary: op.summary ?? '', auth };
      (method === 'get' ? read : actions).push(entry);
    }
  }
  return { read, actions };
}

export default async function docsRoutes(app: FastifyInstance): Promise<void> {
  const { issuer } = app.kp.config;
  const wantsJson = (format: unknown, accept: string | undefined) =>
    format === 'json' || (format === undefined && /application\/json/.test(accept ?? ''));

  app.get('/openapi.json', {
    config: { cache: 'public, max-age=300' },
    schema: { tags: ['discovery'], summary: 'OpenAPI 3.1 description of this interface (version svc-api-1)', response: { 200: anyObject, ...errorResponses } },
  }, async () => app.swagger());

  app.get('/changelog', {
    config: { cache: 'public, max-age=300' },
    schema: {
      tags: ['discovery'],
      summary: 'Release history: HTML, or versioned JSON with format=json or Accept: application/json',
      querystring: { type: 'object', properties: { format: { type: 'string', enum: ['json', 'html'] } }, additionalProperties: false },
      response: { 200: anyObject, ...errorResponses },
    },
  }, async (request, reply) => {
    const { format } = request.query as { format?: string };
    reply.header('vary', 'accept');
    if (wantsJson(format, request.headers.accept)) return { ok: true, format: CHANGELOG_FORMAT, api: 'svc-api-1', entries: changelog };
    reply.type('text/html; charset=utf-8');
    return page({
      title: 'Changelog',
      nonce: request.kp.cspNonce,
      body: html`<h1>Changelog</h1>
<p class="muted">Also as versioned JSON: <a href="/changelog?format=json">/changelog?format=json</a>.</p>
${changelog.map((entry) => html`<section aria-labelledby="v-${entry.version}">
<h2 id="v-${entry.version}">${entry.version} <span class="muted">(${entry.date}, API ${entry.api})</span></h2>
<ul>${entry.changes.map((c) => html`<li><strong>${c.area}</strong>: ${c.text}</li>`)}</ul>
</section>`)}`,
    });
  });

  app.get('/agents.json', {
    config: { cache: 'public, max-age=300' },
    schema: { tags: ['discovery'], summary: 'Capability and safety contract for automated clients', response: { 200: anyObject, ...errorResponses } },
  }, async () => ({
    ok: true,
    format: 'keyplane-agents/v1',
    service: 'Keyplane',
    issuer,
    api: 'svc-api-1',
    documents: {
      introspection: `${issuer}/agent`,
      openapi: `${issuer}/openapi.json`,
      oidc: `${issuer}/.well-known/openid-configuration`,
      llms: `${issuer}/.well-known/llms.txt`,
    },
    principals: {
      human: 'Signs in with a passkey; tokens carry svc.principal.type = "human".',
      agent: 'Uses its own approved, scoped, revocable credential; a human sign-in never makes a script an agent.',
    },
    safety: [
      'Every failure is a JSON envelope {ok:false, reason, message?} with a matching HTTP status.',
      'Requests on credential paths are rate-limited per address and per account; repeated failures lock out.',
      'Receipts are looked up by hash only; nothing is listed or enumerable.',
      'No secret, token or code is ever returned twice or written to logs.',
    ],
  }));

  app.get('/agent', {
    config: { cache: 'public, max-age=60' },
    schema: { tags: ['discovery'], summary: 'Secret-free introspection: capabilities, read surfaces and callable actions', response: { 200: anyObject, ...errorResponses } },
  }, async () => {
    const surfaces = describeSurfaces(app.swagger() as OpenApiDocument);
    return {
      ok: true,
      format: 'keyplane-agent-introspection/v1',
      issuer,
      api: 'svc-api-1',
      capabilities: {
        oidc: { response_types: ['code'], pkce: ['S256'], signing: ['ES256'], dpop: ['ES256', 'EdDSA'] },
        receipts: 'by hash only',
      },
      read_surfaces: surfaces.read,
      callable_actions: surfaces.actions,
    };
  });

  app.get('/.well-known/llms.txt', {
    config: { cache: 'public, max-age=300' },
    schema: { tags: ['discovery'], summary: 'Plain-text guide for language models', produces: ['text/plain'] },
  }, async (_request, reply) => {
    reply.type('text/plain; charset=utf-8');
    return `# Keyplane

> Passkey-first identity and security plane: an OpenID Connect provider (code flow, PKCE S256, ES256, DPoP), passkeys, a tamper-evident receipt ledger and an edge gateway.

Issuer: ${issuer}

## Documents
- [OpenID configuration](${issuer}/.well-known/openid-configuration): the endpoints and capabilities that exist.
- [OpenAPI 3.1](${issuer}/openapi.json): every route with its schema (version svc-api-1).
- [Agent introspection](${issuer}/agent): read surfaces and callable actions, without secrets.
- [Agent contract](${issuer}/agents.json): how automated clients are identified and what is refused.
- [Changelog](${issuer}/changelog?format=json)

## Rules
- Failures are JSON: {"ok": false, "reason": "<code>", "message": "<text>"}.
- Tokens report the assurance actually proved in svc.assurance: recovery < email < passkey < sensitive.
- Agents are never humans: svc.principal.type says which.
`;
  });
}
