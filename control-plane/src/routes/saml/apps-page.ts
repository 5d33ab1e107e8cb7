import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sameOriginReferrerArea } from '../../plugins/security-headers.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ErrorPage } from '../../plugins/errors.js';
import { meetsAssurance } from '#lib/assurance/assurance.js';
import { orgsAdministeredBy } from '../../orgs/membership.js';
import { accessRuleParts } from '#lib/access/evaluate-access.js';
import { accessRuleText } from '../../pages/access-rules.js';
import { NAMEID_FORMAT } from '#lib/saml/constants.js';
import { html, page, raw, type SafeHtml } from '../../pages/layout.js';
import { refusalText } from '../../pages/link-pages.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import { requireSession } from '../../plugins/session.js';
import {
  deleteProvider,
  getProvider,
  listProviders,
  registerProvider,
  sessionActor,
  updateProvider,
  type ProviderActor,
} from '../../saml/providers.js';
import { samlUrls } from '../../saml/sso.js';
import type { StoredSamlProvider } from '../../storage/interface.js';
import { errorResponses } from '../../http/schemas.js';

/**
 * `/apps/saml`: the SAML service providers of the organizations the signed-in user administers (all of
 * them for the founder, the operator), with plain HTML forms (no JavaScript) to register and remove them.
 * Changes need a `sensitive` session; a form post without one is sent to the step-up page, which returns here.
 */
const session = [{ sessionCookie: [] }];
const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;

function lines(value: unknown): string[] {
  return [value ?? []]
    .flat()
    .flatMap((v) => String(v).split(/\s+/))
    .filter((v) => v !== '');
}

function formatName(ui: PageUi, format: string): string {
  return format === NAMEID_FORMAT.email ? ui.t('saml_apps.format.email') : ui.t('saml_apps.format.persistent');
}

const code = { code: (inner: string) => `<code>${inner}</code>` };

function providersPage(
  ui: PageUi,
  input: {
    providers: StoredSamlProvider[];
    operator: boolean;
    orgs: Array<{ slug: string; name: string; orgId: string }>;
    sensitive: boolean;
    issuer: string;
    notice?: SafeHtml;
  },
): SafeHtml {
  const urls = samlUrls(input.issuer);
  const orgName = new Map(input.orgs.map((o) => [o.orgId, o.name]));
  const t = ui.t;
  return html`<h1>${t('saml_apps.title')}</h1>
<p class="muted">${raw(ui.rich('saml_apps.intro', code, { guide: 'docs/saml.md', path: '/saml/providers' }))}</p>
<p>${t('saml_apps.metadata')} <a href="/saml/metadata"><code>${urls.entityId}</code></a></p>
${input.notice ?? ''}
${input.sensitive ? '' : html`<p role="note">${raw(ui.rich('saml_apps.step_up', { link: (inner) => `<a href="/auth/step-up?return=%2Fapps%2Fsaml">${inner}</a>` }))}</p>`}
<h2 id="sp-heading">${t('saml_apps.list.heading')}</h2>
${
  input.providers.length === 0
    ? html`<p>${t('saml_apps.list.none')}</p>`
    : html`<table aria-labelledby="sp-heading">
<thead><tr><th scope="col">${t('saml_apps.col.name')}</th><th scope="col">${t('saml_apps.col.entity_id')}</th><th scope="col">${t('saml_apps.col.org')}</th><th scope="col">NameID</th><th scope="col">${t('saml_apps.col.who')}</th><th scope="col">${t('saml_apps.col.acs')}</th><th scope="col">${t('apps.col.actions')}</th></tr></thead>
<tbody>
${input.providers.map(
  (p) => html`<tr data-provider="${p.id}">
<td>${p.name ?? t('apps.no_name')}</td>
<td><code>${p.entityId}</code></td>
<td>${p.orgId ? (orgName.get(p.orgId) ?? p.orgId) : t('saml_apps.operator')}</td>
<td>${formatName(ui, p.nameIdFormat)}</td>
<td data-field="sign-in-rules">${accessRuleText(ui, accessRuleParts(p.accessOrgs ? { orgs: p.accessOrgs } : undefined))}</td>
<td>${p.acsUrls.map((u) => html`<code>${u}</code> `)}</td>
<td><a href="/apps/saml/${encodeURIComponent(p.id)}/edit" aria-label="${t('saml_apps.edit_label', { name: p.name ?? p.entityId })}">${t('saml_apps.edit')}</a>
<form method="post" action="/apps/saml/${encodeURIComponent(p.id)}/delete"><button type="submit" class="secondary" aria-label="${t('saml_apps.remove_label', { name: p.name ?? p.entityId })}">${t('saml_apps.remove')}</button></form></td>
</tr>`,
)}
</tbody>
</table>`
}
<h2>${t('saml_apps.register.heading')}</h2>
${
  input.orgs.length === 0 && !input.operator
    ? html`<p>${t('saml_apps.register.no_orgs')}</p>`
    : providerForm(ui, {
        action: '/apps/saml/register',
        submit: t('apps.register.button'),
        owners: html`<label for="org">${t('saml_apps.form.owner')}</label>
<select id="org" name="org">${input.operator ? html`<option value="">${t('saml_apps.form.owner_operator')}</option>` : ''}${input.orgs.map((o) => html`<option value="${o.slug}">${o.name}</option>`)}</select>`,
      })
}`;
}

/** The provider form: empty to register, filled (with the revision it was read at) to edit. */
function providerForm(
  ui: PageUi,
  input: {
    action: string;
    submit: string;
    owners?: SafeHtml;
    provider?: StoredSamlProvider;
  },
): SafeHtml {
  const p = input.provider;
  const email = p?.nameIdFormat === NAMEID_FORMAT.email;
  const t = ui.t;
  return html`<form method="post" action="${input.action}">
${input.owners ?? ''}${p ? html`<input type="hidden" name="revision" value="${String(p.revision)}">` : ''}
<label for="name">${t('saml_apps.col.name')}</label>
<input id="name" name="name" type="text" maxlength="100" value="${p?.name ?? ''}">
<label for="entity_id">${t('saml_apps.col.entity_id')}</label>
<input id="entity_id" name="entity_id" type="text" required maxlength="1024" value="${p?.entityId ?? ''}">
<label for="acs_urls">${t('saml_apps.form.acs')}</label>
<textarea id="acs_urls" name="acs_urls" rows="2" cols="60" required>${p ? p.acsUrls.join('\n') : ''}</textarea>
<label for="slo_url">${t('saml_apps.form.slo')}</label>
<input id="slo_url" name="slo_url" type="url" maxlength="2000" value="${p?.sloUrl ?? ''}">
<label for="certificate">${t('saml_apps.form.certificate')}</label>
<textarea id="certificate" name="certificate" rows="6" cols="60" required>${p?.certificatePem ?? ''}</textarea>
<label for="name_id_format">${t('saml_apps.form.format')}</label>
<select id="name_id_format" name="name_id_format"><option value="persistent">${t('saml_apps.format.persistent')}</option><option value="email"${email ? ' selected' : ''}>${t('saml_apps.format.email')}</option></select>
<label for="access_orgs">${raw(ui.rich('saml_apps.form.access', code, { example: 'acme:admin+owner' }))}</label>
<input id="access_orgs" name="access_orgs" type="text" maxlength="2000" value="${p?.accessOrgs ? accessText(p.accessOrgs) : ''}">
<label><input type="checkbox" name="want_signed_requests" value="true"${!p || p.wantSignedRequests ? ' checked' : ''}> ${t('saml_apps.form.signed')}</label>
<label><input type="checkbox" name="allow_idp_initiated" value="true"${p?.allowIdpInitiated ? ' checked' : ''}> ${t('saml_apps.form.idp_initiated')}</label>
<button type="submit">${input.submit}</button>
</form>`;
}

/** `access.orgs` as the form writes it: `acme, ops:admin+owner`. */
function accessText(orgs: NonNullable<StoredSamlProvider['accessOrgs']>): string {
  return orgs.map((o) => (o.roles?.length ? `${o.slug}:${o.roles.join('+')}` : o.slug)).join(', ');
}

/** The form's `access_orgs` text in the API's shape (checked there), or undefined when empty. */
function accessFromText(value: unknown): { orgs: Array<{ slug: string; roles?: string[] }> } | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const orgs = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      const [slug, roles] = entry.split(':', 2) as [string, string | undefined];
      return { slug: slug.trim(), ...(roles === undefined ? {} : { roles: roles.split('+').map((r) => r.trim()) }) };
    });
  return { orgs };
}

/** The form's fields in the API's shape. */
function formSettings(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    entity_id: typeof fields.entity_id === 'string' ? fields.entity_id.trim() : fields.entity_id,
    acs_urls: lines(fields.acs_urls),
    certificate: fields.certificate,
    name_id_format: fields.name_id_format,
    ...(typeof fields.name === 'string' && fields.name.trim() ? { name: fields.name } : {}),
    ...(typeof fields.slo_url === 'string' && fields.slo_url.trim() ? { slo_url: fields.slo_url.trim() } : {}),
    want_signed_requests: fields.want_signed_requests === 'true',
    allow_idp_initiated: fields.allow_idp_initiated === 'true',
    ...(accessFromText(fields.access_orgs) ? { access: accessFromText(fields.access_orgs) } : {}),
  };
}

export default async function samlAppsPage(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  // The providers page and the edit form post back with the session.
  sameOriginReferrerArea(app);

  async function render(
    request: FastifyRequest,
    reply: FastifyReply,
    notice?: SafeHtml,
    status = 200,
  ): Promise<string> {
    const current = request.kp.session!;
    const orgs = await orgsAdministeredBy(services, current.identityId);
    const actor = await sessionActor(services, current.identityId);
    const providers = await listProviders(services, actor);
    reply.code(status).type('text/html; charset=utf-8');
    const ui = uiOf(request, '/apps/saml');
    const body = providersPage(ui, {
      providers,
      orgs,
      operator: actor.kind === 'operator',
      sensitive: meetsAssurance(current.assurance, 'sensitive'),
      issuer: services.config.issuer,
      ...(notice ? { notice } : {}),
    });
    return page({ title: ui.t('saml_apps.title'), nonce: request.kp.cspNonce, ui, body });
  }

  /** A change from the page: without a sensitive session, off to the step-up page and back. */
  async function change(
    request: FastifyRequest,
    reply: FastifyReply,
    work: (actor: ProviderActor) => Promise<SafeHtml>,
  ): Promise<unknown> {
    const current = request.kp.session!;
    if (!meetsAssurance(current.assurance, 'sensitive'))
      return reply.redirect('/auth/step-up?return=%2Fapps%2Fsaml', 303);
    return render(request, reply, await work(await sessionActor(services, current.identityId)));
  }

  /** A refused change: the page again, with the reason above the forms (signed-in only). */
  const errorPage: ErrorPage = (request, failure, reply) =>
    request.kp.session
      ? render(
          request,
          reply,
          html`<p class="error" role="alert" data-reason="${failure.reason}">${refusalText(uiOf(request), failure)}</p>`,
          failure.status,
        )
      : undefined;

  app.get(
    '/apps/saml',
    {
      onRequest: requireSession,
      schema: {
        tags: ['saml'],
        summary: 'SAML service providers of your organizations: the management page',
        security: session,
        produces: ['text/html'],
        response: { ...errorResponses },
      },
    },
    async (request, reply) => render(request, reply),
  );

  app.post(
    '/apps/saml/register',
    {
      onRequest: requireSession,
      config: { errorPage },
      schema: {
        tags: ['saml'],
        summary: "Register a service provider from the page's form (sensitive session)",
        security: session,
        body: { type: 'object', additionalProperties: true },
        response: { ...errorResponses },
      },
    },
    async (request, reply) =>
      change(request, reply, async (actor) => {
        const fields = (request.body ?? {}) as Record<string, unknown>;
        if (typeof fields !== 'object') throw fail('invalid_request', 'send the form');
        const { provider } = await registerProvider(services, actor, { org: fields.org, ...formSettings(fields) });
        return html`<p role="status">${raw(uiOf(request).rich('saml_apps.done.registered', code, { entity: provider.entityId }))}</p>`;
      }),
  );

  app.post(
    '/apps/saml/:id/delete',
    {
      onRequest: requireSession,
      config: { errorPage },
      schema: {
        tags: ['saml'],
        summary: 'Remove a service provider from the page (sensitive session)',
        security: session,
        params: idParams,
        response: { ...errorResponses },
      },
    },
    async (request, reply) =>
      change(request, reply, async (actor) => {
        await deleteProvider(services, actor, (request.params as { id: string }).id);
        return html`<p role="status">${uiOf(request).t('saml_apps.done.removed')}</p>`;
      }),
  );

  app.get(
    '/apps/saml/:id/edit',
    {
      onRequest: requireSession,
      schema: {
        tags: ['saml'],
        summary: 'The edit form of one service provider',
        security: session,
        params: idParams,
        produces: ['text/html'],
        response: { ...errorResponses },
      },
    },
    async (request, reply) => {
      const current = request.kp.session!;
      const provider = await getProvider(
        services,
        await sessionActor(services, current.identityId),
        (request.params as { id: string }).id,
      );
      reply.type('text/html; charset=utf-8');
      const ui = uiOf(request);
      const body = html`<h1>${ui.t('saml_apps.edit.heading', { name: provider.name ?? provider.entityId })}</h1>
<p><a href="/apps/saml">${ui.t('saml_apps.edit.back')}</a></p>
${meetsAssurance(current.assurance, 'sensitive') ? '' : html`<p role="note">${ui.t('saml_apps.edit.step_up')}</p>`}
${providerForm(ui, { action: `/apps/saml/${encodeURIComponent(provider.id)}/update`, submit: ui.t('apps.edit.save'), provider })}`;
      return page({ title: ui.t('saml_apps.edit.title'), nonce: request.kp.cspNonce, ui, body });
    },
  );

  app.post(
    '/apps/saml/:id/update',
    {
      onRequest: requireSession,
      config: { errorPage },
      schema: {
        tags: ['saml'],
        summary: 'Save a service provider from its edit form (sensitive session; stale revisions refused)',
        security: session,
        params: idParams,
        body: { type: 'object', additionalProperties: true },
        response: { ...errorResponses },
      },
    },
    async (request, reply) =>
      change(request, reply, async (actor) => {
        const fields = (request.body ?? {}) as Record<string, unknown>;
        const id = (request.params as { id: string }).id;
        // The form has no attribute editor: the stored mapping is kept, not reset to the default.
        const before = await getProvider(services, actor, id);
        const revision =
          typeof fields.revision === 'string' && /^[0-9]{1,9}$/.test(fields.revision)
            ? Number(fields.revision)
            : undefined;
        const { provider } = await updateProvider(services, actor, id, {
          ...formSettings(fields),
          attributes: before.attributes,
          ...(revision === undefined ? {} : { revision }),
        });
        return html`<p role="status">${raw(uiOf(request).rich('saml_apps.done.saved', code, { entity: provider.entityId }))}</p>`;
      }),
  );
}
