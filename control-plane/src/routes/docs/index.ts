import type { FastifyInstance } from 'fastify';
import type { ChangelogVersion } from '#lib/changelog/keep-a-changelog.js';
import { loadChangelog } from '../../changelog/changelog.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { html, page, raw, type SafeHtml } from '../../pages/layout.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import { anyObject, errorResponses, okObject } from '../../http/schemas.js';

interface Operation {
  summary?: string;
  security?: Array<Record<string, unknown>>;
  tags?: string[];
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, Operation>>;
}

export interface Surface {
  method: string;
  path: string;
  summary: string;
  auth: string[];
  tags: string[];
}

const HTTP_METHODS = ['get', 'post', 'put', 'delete', 'patch'];

/**
 * Every route of the OpenAPI description, in one list: `/agent`, `/agents.json` and
 * `/.well-known/llms.txt` are all derived from it, so none can list a route that does not exist
 * or miss one that does. Only summaries, methods, paths and the kinds of credential appear;
 * no example, default or value.
 */
export function describeRoutes(doc: OpenApiDocument): Surface[] {
  const surfaces: Surface[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      const auth = op.security?.length ? Object.keys(op.security[0] ?? {}) : ['none'];
      surfaces.push({ method: method.toUpperCase(), path, summary: op.summary ?? '', auth, tags: op.tags ?? [] });
    }
  }
  return surfaces;
}

/** The agent introspection document's split: what can be read, and what can be called. */
export function describeSurfaces(doc: OpenApiDocument): { read: Surface[]; actions: Surface[] } {
  const routes = describeRoutes(doc);
  return { read: routes.filter((s) => s.method === 'GET'), actions: routes.filter((s) => s.method !== 'GET') };
}

/** Inline `code` spans in a changelog line become <code>; everything else is escaped text. */
function inline(text: string): SafeHtml {
  const parts = text.split('`');
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : part))}`;
}

/** Keep a Changelog's section names, in the reader's language; another heading is shown as written. */
const CHANGE_TYPES: Record<string, MessageKey | undefined> = {
  added: 'changelog.type.added',
  changed: 'changelog.type.changed',
  deprecated: 'changelog.type.deprecated',
  removed: 'changelog.type.removed',
  fixed: 'changelog.type.fixed',
  security: 'changelog.type.security',
};

/** The page's chrome is translated; the entries are CHANGELOG.md's, in English (`lang="en"` on them). */
function changelogPage(nonce: string, ui: PageUi, versions: ChangelogVersion[]) {
  const { t } = ui;
  const id = (v: ChangelogVersion) => `v-${v.version.replace(/[^A-Za-z0-9._-]/g, '-')}`;
  const type = (name: string) => {
    const key = CHANGE_TYPES[name];
    return key ? t(key) : name;
  };
  return page({
    title: t('changelog.title'),
    nonce,
    ui,
    body: html`<h1>${t('changelog.heading')}</h1>
<p class="muted">${raw(ui.rich('changelog.json', { link: (c) => `<a href="/changelog?format=json">${c}</a>` }, { url: '/changelog?format=json' }))}</p>
${ui.locale === 'en' ? '' : html`<p class="muted" data-notice="english-entries">${t('changelog.english_only')}</p>`}
${versions.map(
  (v) => html`<section aria-labelledby="${id(v)}">
<h2 id="${id(v)}">${v.version === 'Unreleased' ? t('changelog.unreleased') : v.version}${v.date ? html` <span class="muted">(<time datetime="${v.date}">${ui.date(Date.parse(v.date))}</time>)</span>` : ''}</h2>
<ul>${v.changes.map((c) => html`<li><strong>${type(c.type)}</strong>: <span lang="en">${inline(c.text)}</span></li>`)}</ul>
</section>`,
)}`,
  });
}

const changeSchema = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { type: 'string' }, text: { type: 'string' } },
} as const;
const versionSchema = {
  type: 'object',
  required: ['version', 'date', 'changes'],
  properties: {
    version: { type: 'string' },
    date: { type: ['string', 'null'], format: 'date' },
    changes: { type: 'array', items: changeSchema },
  },
} as const;

export default async function docsRoutes(app: FastifyInstance): Promise<void> {
  const { issuer } = app.kp.config;
  const versions = loadChangelog();
  const wantsJson = (format: unknown, accept: string | undefined) =>
    format === 'json' || (format === undefined && /application\/json/.test(accept ?? ''));
  const routes = () => describeRoutes(app.swagger() as OpenApiDocument);

  app.get(
    '/openapi.json',
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['discovery'],
        summary: 'OpenAPI 3.1 description of this interface (version svc-api-1)',
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async () => app.swagger(),
  );

  app.get(
    '/changelog',
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['discovery'],
        summary:
          'Release history from CHANGELOG.md: HTML, or versioned JSON with format=json or Accept: application/json',
        querystring: {
          type: 'object',
          // lang: the language switcher's choice (docs/i18n.md).
          properties: { format: { type: 'string', enum: ['json', 'html'] }, lang: { type: 'string', maxLength: 64 } },
          additionalProperties: false,
        },
        response: {
          200: okObject({ versions: { type: 'array', items: versionSchema } }, ['versions']),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { format } = request.query as { format?: string };
      reply.header('vary', 'accept');
      if (wantsJson(format, request.headers.accept)) return { ok: true, versions };
      // The page follows the reader's language (Accept-Language, the kp_lang cookie, the account's), so no shared cache keeps it.
      reply.header('vary', 'accept, accept-language, cookie');
      reply.header('cache-control', 'private, max-age=300');
      reply.type('text/html; charset=utf-8');
      return changelogPage(request.kp.cspNonce, uiOf(request), versions);
    },
  );

  app.get(
    '/agents.json',
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['discovery'],
        summary: 'Capability and safety contract for automated clients, with every route',
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async () => {
      const surfaces = describeSurfaces(app.swagger() as OpenApiDocument);
      return {
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
          changelog: `${issuer}/changelog?format=json`,
          ...(app.hasRoute({ method: 'POST', url: '/mcp' })
            ? { mcp: `${issuer}/mcp`, mcp_tools: `${issuer}/mcp/tools` }
            : {}),
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
          'The MCP tool server is read-only: a call that would change anything is refused and receipted.',
        ],
        routes: [...surfaces.read, ...surfaces.actions].map(({ method, path, summary, auth }) => ({
          method,
          path,
          summary,
          auth,
        })),
      };
    },
  );

  app.get(
    '/agent',
    {
      config: { cache: 'public, max-age=60' },
      schema: {
        tags: ['discovery'],
        summary: 'Secret-free introspection: capabilities, read surfaces and callable actions',
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async () => {
      const surfaces = describeSurfaces(app.swagger() as OpenApiDocument);
      const strip = ({ method, path, summary, auth }: Surface) => ({ method, path, summary, auth });
      return {
        ok: true,
        format: 'keyplane-agent-introspection/v1',
        issuer,
        api: 'svc-api-1',
        capabilities: {
          oidc: { response_types: ['code'], pkce: ['S256'], signing: ['ES256'], dpop: ['ES256', 'EdDSA'] },
          receipts: 'by hash only',
          ...(app.hasRoute({ method: 'POST', url: '/mcp' })
            ? { mcp: { endpoint: `${issuer}/mcp`, transport: 'streamable-http', read_only: true } }
            : {}),
        },
        read_surfaces: surfaces.read.map(strip),
        callable_actions: surfaces.actions.map(strip),
      };
    },
  );

  app.get(
    '/.well-known/llms.txt',
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['discovery'],
        summary: 'Plain-text guide for language models, with every route',
        produces: ['text/plain'],
      },
    },
    async (_request, reply) => {
      reply.type('text/plain; charset=utf-8');
      const byTag = new Map<string, Surface[]>();
      for (const surface of routes()) {
        const tag = surface.tags[0] ?? 'other';
        byTag.set(tag, [...(byTag.get(tag) ?? []), surface]);
      }
      const sections = [...byTag].map(
        ([tag, list]) =>
          `## ${tag}\n${list.map((s) => `- ${s.method} ${s.path}${s.auth[0] === 'none' ? '' : ` (${s.auth.join(', ')})`}: ${s.summary}`).join('\n')}`,
      );
      return `# Keyplane

> Passkey-first identity and security plane: an OpenID Connect provider (code flow, PKCE S256, ES256, DPoP), passkeys, a tamper-evident receipt ledger and a forward-auth gateway.

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

${sections.join('\n\n')}
`;
    },
  );
}
