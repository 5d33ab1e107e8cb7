import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sameOriginReferrerArea } from '../../plugins/security-headers.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { clientTypeOf, usesClientSecret, validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { html, page, raw, type SafeHtml } from '../../pages/layout.js';
import { refusalText } from '../../pages/link-pages.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { requireAssurance, requireSession, type SessionGuard } from '../../plugins/session.js';
import { meetsAssurance } from '#lib/assurance/assurance.js';
import type { StoredClient, Stores } from '../../storage/interface.js';
import { accessRules } from './access-rules-view.js';
import type { EnforcementReason, EnforcementStatus } from '#lib/gateway-protocol/enforcement-status.js';
import { gatewayEnforcement, type GatewayEnforcement } from '../../managed-gateways/issue-config.js';
import { listOwnedClients, managedClient, orgOwnerFor } from '../../clients/ownership.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import { rotateClientSecret } from '../../clients/operator.js';
import { deleteClient, describeChange, registerClient, updateClient } from '../../clients/registration.js';
import { registerConnector } from '../../connectors/register-connector.js';
import { connectorForm, connectorResultNotice } from '../connectors/page.js';
import {
  afterScimChange,
  checkScimSetter,
  setterActor,
  takeScimMember,
  writeScimTarget,
  type ScimSetter,
} from '../../scim/push-target.js';
import type { ScimTargetInput } from '#lib/scim/outbound.js';
import { scimSyncState, scimSyncStateIfAny, type ScimSyncState } from '../../scim/push-queue.js';
import { scimLine, scimSyncSchema } from './scim-sync.js';

/**
 * Owner operations and the self-serve app registration page (docs/oidc.md, "Owner operations and the self-serve page").
 *
 * A signed-in user lists and registers their own clients; editing, secret rotation and
 * revocation need a `sensitive` session of the owner. A client owned by someone else (or by the
 * operator) answers 404 exactly like an unknown one. Every endpoint accepts JSON, and also the
 * plain HTML form posts of GET /apps, which then get an HTML reply (or a 303 back to /apps).
 */

const session = [{ sessionCookie: [] }];
const anyBody = { type: 'object', additionalProperties: true } as const;
const clientParams = {
  type: 'object',
  required: ['client_id'],
  properties: { client_id: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;
const describedClient = {
  type: 'object',
  additionalProperties: true,
  properties: { client_id: { type: 'string' }, revision: { type: 'integer' } },
} as const;
const clientReply = okObject({
  receipt: { type: 'string' },
  client_id: { type: 'string' },
  client_secret: { type: 'string', description: 'Shown once.' },
  revision: { type: 'integer' },
});

/** Fields never taken from an owner's update body (they are server-managed). */
const SERVER_FIELDS = [
  'ok',
  'receipt',
  'client_id',
  'client_secret',
  'client_secret_expires_at',
  'client_id_issued_at',
  'registration_access_token',
  'registration_client_uri',
  'client_type',
  'revision',
  'format',
];

const sensitiveSession = requireAssurance('sensitive');

/**
 * Editing, rotation and revocation: a `sensitive` session (403 `insufficient_assurance`). A form
 * post from the page with a signed-in but not yet stepped-up session is sent to the step-up
 * page instead (303), which returns to /apps, so the no-JavaScript path does not end on JSON.
 */
const ownerAction: SessionGuard = async (request, reply) => {
  const current = request.kp.session;
  if (current && isForm(request) && !meetsAssurance(current.assurance, 'sensitive'))
    return reply.redirect('/auth/step-up?return=%2Fapps', 303);
  return sensitiveSession(request, reply);
};

function isForm(request: FastifyRequest): boolean {
  return (request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
}

function bodyObject(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw fail('invalid_request', 'the body must be a JSON object or form data');
  return { ...(body as Record<string, unknown>) };
}

/** A textarea of URIs, one per line (or whitespace-separated). */
export function uriList(value: unknown): string[] {
  return [value ?? []]
    .flat()
    .flatMap((v) => String(v).split(/\s+/))
    .filter((v) => v !== '');
}

/** The page's registration form as RFC 7591 metadata. */
export function formRegistration(fields: Record<string, unknown>): Record<string, unknown> {
  const confidential = fields.client_type === 'confidential';
  return {
    client_name: typeof fields.client_name === 'string' ? fields.client_name.trim() : fields.client_name,
    redirect_uris: uriList(fields.redirect_uris),
    token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
  };
}

function revisionOf(value: unknown): number {
  const revision = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;
  if (typeof revision !== 'number' || !Number.isInteger(revision) || revision < 1)
    throw fail('invalid_request', 'revision is required: send the revision this edit is based on');
  return revision;
}

/**
 * A client the caller manages: its own, or its org's when it is an admin or owner there (a
 * member gets 403); anything else 404 as if it did not exist (docs/orgs.md#apps).
 */
async function ownClient(app: FastifyInstance, request: FastifyRequest): Promise<StoredClient> {
  const { client_id: clientId } = request.params as { client_id: string };
  return managedClient(app.kp, request.kp.session!.identityId, clientId);
}

/** The owner of a new client: the caller, or the org named by `org` (its slug) when the caller is an admin or owner there. */
async function ownerFor(
  app: FastifyInstance,
  request: FastifyRequest,
  fields: Record<string, unknown>,
): Promise<string> {
  const org = fields.org;
  delete fields.org;
  const identityId = request.kp.session!.identityId;
  return org === undefined || org === '' ? identityId : orgOwnerFor(app.kp, org, identityId);
}

function listEntry(client: StoredClient) {
  return {
    client_id: client.clientId,
    client_name: client.metadata.client_name ?? null,
    client_type: clientTypeOf(client.metadata.token_endpoint_auth_method),
    redirect_uris: client.metadata.redirect_uris,
    revision: client.revision,
    created_at: new Date(client.createdAt).toISOString(),
    updated_at: new Date(client.updatedAt).toISOString(),
  };
}

/** What an owner reads about a gateway client's enforcement (the reasons of lib/gateway-protocol/enforcement-status.ts). */
const ENFORCEMENT_TEXT: Record<EnforcementReason, MessageKey> = {
  enforcing_declared_config: 'apps.enforcement.enforcing_declared_config',
  no_config_declared: 'apps.enforcement.no_config_declared',
  no_evidence: 'apps.enforcement.no_evidence',
  evidence_expired: 'apps.enforcement.evidence_expired',
  failing_closed: 'apps.enforcement.failing_closed',
  config_mismatch: 'apps.enforcement.config_mismatch',
};

const ENFORCEMENT_STATUS: Record<EnforcementStatus, MessageKey> = {
  green: 'apps.enforcement.status.green',
  stale: 'apps.enforcement.status.stale',
  unknown: 'apps.enforcement.status.unknown',
};

const CLIENT_TYPE: Record<ReturnType<typeof clientTypeOf>, MessageKey> = {
  public: 'apps.type.public',
  confidential: 'apps.type.confidential',
};

function gatewayCell(ui: PageUi, client: StoredClient, enforcement: GatewayEnforcement | undefined): SafeHtml {
  if (!enforcement) return html`<span class="muted">${ui.t('apps.not_gateway')}</span>${accessRules(ui, client)}`;
  const line = ui.rich(
    enforcement.declared ? 'apps.enforcement.line_version' : 'apps.enforcement.line',
    { strong: (inner) => `<strong>${inner}</strong>` },
    {
      status: ui.t(ENFORCEMENT_STATUS[enforcement.status]),
      reason: ui.t(ENFORCEMENT_TEXT[enforcement.reason]),
      ...(enforcement.declared ? { version: enforcement.declared.version } : {}),
    },
  );
  return html`<span data-gateway-status="${enforcement.status}">${raw(line)}</span>
<a href="/gateway/status/${encodeURIComponent(client.clientId)}">${ui.t('apps.enforcement.json')}</a>${accessRules(ui, client)}`;
}

function appsPage(
  ui: PageUi,
  clients: StoredClient[],
  enforcement: ReadonlyMap<string, GatewayEnforcement>,
  scim: ReadonlyMap<string, ScimSyncState>,
  assurance: string,
  notice?: SafeHtml,
): SafeHtml {
  const t = ui.t;
  const sensitive = assurance === 'sensitive';
  const code = { code: (inner: string) => `<code>${inner}</code>` };
  return html`<h1>${t('apps.title')}</h1>
<p class="muted">${raw(ui.rich('apps.intro', code, { guide: 'docs/oidc.md' }))}</p>
<p>${raw(ui.rich('apps.saml_link', { link: (inner) => `<a href="/apps/saml">${inner}</a>` }))}</p>
${notice ?? ''}
${sensitive ? '' : html`<p role="note">${raw(ui.rich('apps.step_up', { link: (inner) => `<a href="/auth/step-up?return=%2Fapps">${inner}</a>` }))}</p>`}
<h2 id="list-heading">${t('apps.list.heading')}</h2>
${
  clients.length === 0
    ? html`<p>${t('apps.list.none')}</p>`
    : html`<table aria-labelledby="list-heading">
<thead><tr><th scope="col">${t('apps.col.app')}</th><th scope="col">${t('apps.col.client_id')}</th><th scope="col">${t('apps.col.type')}</th><th scope="col">${t('apps.col.gateway')}</th><th scope="col">${t('apps.col.actions')}</th></tr></thead>
<tbody>
${clients.map((c) => {
  const id = encodeURIComponent(c.clientId);
  const confidential = usesClientSecret(c.metadata.token_endpoint_auth_method);
  return html`<tr>
<td>${c.metadata.client_name ?? t('apps.no_name')}${scimLine(ui, scim.get(c.clientId))}</td>
<td><code>${c.clientId}</code></td>
<td>${t(CLIENT_TYPE[clientTypeOf(c.metadata.token_endpoint_auth_method)])}</td>
<td>${gatewayCell(ui, c, enforcement.get(c.clientId))}</td>
<td>
<form method="post" action="/apps/${id}/update">
<input type="hidden" name="revision" value="${c.revision}">
<label for="name-${c.clientId}">${t('apps.edit.name')}</label>
<input id="name-${c.clientId}" name="client_name" type="text" value="${c.metadata.client_name ?? ''}" maxlength="100">
<label for="uris-${c.clientId}">${t('apps.edit.uris')}</label>
<textarea id="uris-${c.clientId}" name="redirect_uris" rows="3" cols="40">${c.metadata.redirect_uris.join('\n')}</textarea>
<button type="submit">${t('apps.edit.save')}</button>
</form>
${confidential ? html`<form method="post" action="/apps/${id}/rotate-secret"><button type="submit" class="secondary">${t('apps.rotate')}</button></form>` : ''}
<form method="post" action="/apps/${id}/revoke"><button type="submit" class="secondary" aria-describedby="revoke-note">${t('apps.revoke')}</button></form>
</td>
</tr>`;
})}
</tbody>
</table>
<p id="revoke-note" class="muted">${t('apps.revoke_note')}</p>`
}
<h2>${t('apps.register.heading')}</h2>
<form method="post" action="/apps/register">
<label for="client_name">${t('apps.register.name')}</label>
<input id="client_name" name="client_name" type="text" required maxlength="100">
<label for="redirect_uris">${t('apps.register.uris')}</label>
<textarea id="redirect_uris" name="redirect_uris" rows="3" cols="40" required aria-describedby="uris-help"></textarea>
<p id="uris-help" class="muted">${t('apps.register.uris_help')}</p>
<fieldset>
<legend>${t('apps.register.type')}</legend>
<label><input type="radio" name="client_type" value="public" checked> ${t('apps.register.public')}</label>
<label><input type="radio" name="client_type" value="confidential"> ${t('apps.register.confidential')}</label>
</fieldset>
<button type="submit">${t('apps.register.button')}</button>
</form>
${connectorForm(ui)}`;
}

/** The signed-in person as a setter of a client's SCIM server. */
function personSetter(request: FastifyRequest): ScimSetter & { by: 'person' } {
  const current = request.kp.session!;
  return { by: 'person', identityId: current.identityId, assurance: current.assurance };
}

/** The write of a `scim` member in the registration's (or update's) own transaction; nothing when absent. */
function scimOnWrite(
  services: Parameters<typeof writeScimTarget>[0],
  scim: ScimTargetInput | null | undefined,
  setter: ScimSetter,
): { onInsert?: (tx: Stores, client: StoredClient) => Promise<void> } {
  if (scim === undefined) return {};
  return {
    onInsert: async (tx, client) => {
      await writeScimTarget(services, tx, client, scim, setterActor(setter));
    },
  };
}

export default async function appsRoutes(app: FastifyInstance): Promise<void> {
  // The apps page and its forms post back with the session.
  sameOriginReferrerArea(app);

  async function renderApps(
    request: FastifyRequest,
    reply: FastifyReply,
    notice?: SafeHtml,
    status = 200,
    listed?: StoredClient[],
    scripts?: string[],
  ): Promise<string> {
    const current = request.kp.session!;
    const ui = uiOf(request, '/apps');
    const clients = listed ?? (await listOwnedClients(app.kp, current.identityId));
    // Green only with fresh evidence, as GET /gateway/status says it: declared and observed are kept apart (docs/gateway.md#evidence).
    const enforcement = new Map<string, GatewayEnforcement>();
    for (const client of clients)
      if (client.metadata.gateway) enforcement.set(client.clientId, await gatewayEnforcement(app.kp, client));
    const scim = new Map<string, ScimSyncState>();
    for (const client of clients) {
      const sync = await scimSyncStateIfAny(app.kp, client.clientId);
      if (sync) scim.set(client.clientId, sync);
    }
    reply.code(status).type('text/html; charset=utf-8');
    return page({
      title: ui.t('apps.title'),
      nonce: request.kp.cspNonce,
      ui,
      body: appsPage(ui, clients, enforcement, scim, current.assurance, notice),
      ...(scripts ? { scripts } : {}),
    });
  }

  function secretNotice(
    request: FastifyRequest,
    client: StoredClient,
    secret: string | undefined,
    what: 'apps.done.registered' | 'apps.done.saved' | 'apps.done.rotated',
  ): SafeHtml {
    const ui = uiOf(request);
    const code = { code: (inner: string) => `<code>${inner}</code>` };
    return html`<div role="status">
<p><strong>${ui.t(what)}</strong> ${raw(ui.rich('apps.client_id', code, { id: client.clientId }))}</p>
${secret === undefined ? '' : html`<p>${raw(ui.rich('apps.secret_once', code, { secret }))}</p>`}
</div>`;
  }

  app.get(
    '/apps',
    {
      onRequest: requireSession,
      schema: {
        tags: ['clients'],
        summary: 'Your apps: the self-serve registration page, or with format=json the list of clients you own',
        security: session,
        description:
          'With `org=<slug>`: the clients that organization owns, for its admins and owners (a member gets 403 `forbidden`, a non-member 404).',
        querystring: {
          type: 'object',
          properties: { format: { enum: ['json', 'html'] }, org: { type: 'string', maxLength: 64 } },
        },
        response: { 200: okObject({ clients: { type: 'array', items: describedClient } }), ...errorResponses },
      },
    },
    async (request, reply) => {
      const { format, org } = request.query as { format?: string; org?: string };
      const identityId = request.kp.session!.identityId;
      const clients = await listOwnedClients(app.kp, identityId, org);
      if (format === 'json') return { ok: true, clients: clients.map(listEntry) };
      return renderApps(request, reply, undefined, 200, clients);
    },
  );

  app.post(
    '/apps/register',
    {
      onRequest: requireSession,
      schema: {
        tags: ['clients'],
        summary: "Register a client you own (RFC 7591 metadata as JSON, or the page's form)",
        security: session,
        description: 'With `org: <slug>` the organization owns the client; the caller must be its admin or owner.',
        body: anyBody,
        response: { 201: clientReply, ...errorResponses },
      },
    },
    async (request, reply) => {
      const form = isForm(request);
      const fields = bodyObject(request);
      const ownerId = await ownerFor(app, request, fields);
      const scim = takeScimMember(fields);
      const metadata = validateClientMetadata(form ? formRegistration(fields) : fields, {
        defaultScopes: app.kp.config.oidc.defaultClientScopes,
      });
      const setter = personSetter(request);
      if (scim !== undefined) await checkScimSetter(app.kp, ownerId, setter);
      const change = await registerClient(
        app.kp,
        metadata,
        { by: 'session', ownerId, identityId: setter.identityId },
        scimOnWrite(app.kp, scim, setter),
      );
      if (scim !== undefined) await afterScimChange(app.kp);
      if (form)
        return renderApps(
          request,
          reply,
          secretNotice(request, change.client, change.issued.clientSecret, 'apps.done.registered'),
          201,
        );
      reply.code(201);
      return { ok: true, ...describeChange(app.kp, change) };
    },
  );

  app.post(
    '/apps/connectors',
    {
      onRequest: requireSession,
      // A person at the form gets the page back with the reason, not a JSON envelope.
      config: {
        errorPage: (request, failure, reply) =>
          request.kp.session
            ? renderApps(
                request,
                reply,
                html`<p role="alert" class="error" data-reason="${failure.reason}">${refusalText(uiOf(request), failure)}</p>`,
                failure.status,
              )
            : undefined,
      },
      schema: {
        tags: ['connectors'],
        summary:
          "The page's connector form: registers a client you own from a template and shows the tool's configuration",
        security: session,
        body: anyBody,
        response: {
          201: { type: 'string', description: 'The apps page with the registration and the snippet.' },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const fields = bodyObject(request);
      const ownerId = await ownerFor(app, request, fields);
      const { connector, ...inputs } = fields;
      if (typeof connector !== 'string' || connector === '') throw fail('invalid_request', 'pick a tool');
      // Empty form fields (the URL of a tool that takes none) are not inputs.
      const given = Object.fromEntries(Object.entries(inputs).filter(([, value]) => value !== ''));
      const result = await registerConnector(app.kp, connector, given, {
        by: 'session',
        ownerId,
        identityId: request.kp.session!.identityId,
      });
      return renderApps(request, reply, connectorResultNotice(uiOf(request), result), 201, undefined, [
        '/assets/copy.js',
      ]);
    },
  );

  app.post(
    '/apps/:client_id/update',
    {
      onRequest: ownerAction,
      schema: {
        tags: ['clients'],
        summary:
          'Edit a client you own (sensitive session); the body names the revision it is based on and the fields to change',
        security: session,
        params: clientParams,
        body: anyBody,
        response: { 200: clientReply, ...errorResponses },
      },
    },
    async (request, reply) => {
      const client = await ownClient(app, request);
      const form = isForm(request);
      const fields = bodyObject(request);
      const revision = revisionOf(fields.revision);
      if (form) {
        fields.redirect_uris = uriList(fields.redirect_uris);
        if (typeof fields.client_name === 'string') fields.client_name = fields.client_name.trim();
      }
      for (const field of SERVER_FIELDS) delete fields[field];
      const scim = takeScimMember(fields);
      const metadata = validateClientMetadata({ ...client.metadata, ...fields });
      const setter = personSetter(request);
      if (scim !== undefined) await checkScimSetter(app.kp, client.ownerId, setter);
      const change = await updateClient(
        app.kp,
        client,
        revision,
        metadata,
        undefined,
        scimOnWrite(app.kp, scim, setter).onInsert,
      );
      if (scim !== undefined) await afterScimChange(app.kp);
      if (form)
        return renderApps(
          request,
          reply,
          secretNotice(request, change.client, change.issued.clientSecret, 'apps.done.saved'),
        );
      return { ok: true, ...describeChange(app.kp, change) };
    },
  );

  app.get(
    '/apps/:client_id/scim',
    {
      onRequest: requireSession,
      schema: {
        tags: ['clients'],
        summary: 'The outbound SCIM sync state of a client you manage (docs/scim.md#outbound-scim)',
        security: session,
        params: clientParams,
        response: { 200: scimSyncSchema, ...errorResponses },
      },
    },
    async (request) => {
      const client = await ownClient(app, request);
      return { ok: true, ...(await scimSyncState(app.kp, client.clientId)) };
    },
  );

  app.post(
    '/apps/:client_id/rotate-secret',
    {
      onRequest: ownerAction,
      schema: {
        tags: ['clients'],
        summary:
          'Rotate the secret of a confidential client you own (sensitive session); the old secret stops working at once',
        security: session,
        params: clientParams,
        response: { 200: clientReply, ...errorResponses },
      },
    },
    async (request, reply) => {
      const client = await ownClient(app, request);
      const {
        client: updated,
        secret,
        receipt,
      } = await rotateClientSecret(app.kp, client, {
        type: 'person',
        id: request.kp.session!.identityId,
      });
      if (isForm(request))
        return renderApps(request, reply, secretNotice(request, updated, secret, 'apps.done.rotated'));
      return {
        ok: true,
        client_id: updated.clientId,
        client_secret: secret,
        revision: updated.revision,
        ...(receipt ? { receipt } : {}),
      };
    },
  );

  app.post(
    '/apps/:client_id/revoke',
    {
      onRequest: ownerAction,
      schema: {
        tags: ['clients'],
        summary: 'Revoke (delete) a client you own (sensitive session)',
        security: session,
        params: clientParams,
        response: { 200: okObject({ receipt: { type: 'string' } }), ...errorResponses },
      },
    },
    async (request, reply) => {
      const client = await ownClient(app, request);
      const { receipt } = await deleteClient(app.kp, client.clientId);
      if (isForm(request)) return reply.redirect('/apps', 303);
      return { ok: true, ...(receipt ? { receipt } : {}) };
    },
  );
}
