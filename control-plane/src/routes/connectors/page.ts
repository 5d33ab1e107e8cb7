import { CONNECTORS } from '#lib/connectors/catalog.js';
import type { ConnectorNote, ConnectorTemplate } from '#lib/connectors/connector.js';
import { html, raw, type SafeHtml } from '../../pages/layout.js';
import type { PageUi } from '../../pages/ui.js';
import type { ConnectorResult } from '../../connectors/register-connector.js';

/**
 * Server-rendered connector pieces: the catalogue page and the /apps section (no script needed).
 * The templates' notes (inputs, PKCE) are messages of the catalogs (`connector.<name>.*`); the JSON
 * API keeps their English (`describeConnector`).
 */

const code = { code: (inner: string) => `<code>${inner}</code>` };

/** A template's note in the page's language; its values (settings, flags) stay as written, in `<code>`. */
function note(ui: PageUi, value: ConnectorNote): SafeHtml {
  return raw(ui.rich(value.key, code, value.values));
}

function inputList(ui: PageUi, template: ConnectorTemplate): SafeHtml {
  if (template.inputs.length === 0) return html`<p class="muted">${ui.t('connectors.no_inputs')}</p>`;
  return html`<ul>
    ${template.inputs.map(
      (input) =>
        html`<li><code>${input.name}</code>${input.required ? '' : html` ${ui.t('connectors.optional')}`}: ${input.note ? note(ui, input.note) : html`<span lang="en">${input.description}</span>`}</li>`,
    )}
  </ul>`;
}

export function connectorsPage(ui: PageUi): SafeHtml {
  return html`<h1>${ui.t('connectors.title')}</h1>
    <p>
      ${raw(
        ui.rich(
          'connectors.intro',
          { ...code, link: (inner) => `<a href="/apps#connectors">${inner}</a>` },
          { endpoint: 'POST /connectors/{name}' },
        ),
      )}
    </p>
    ${CONNECTORS.map(
      (template) =>
        html`<section aria-labelledby="c-${template.name}">
          <h2 id="c-${template.name}">${template.title} <code>${template.name}</code></h2>
          ${inputList(ui, template)}
          <p><strong>${ui.t('connectors.pkce')}</strong> ${note(ui, template.pkceNote)}</p>
          <p class="muted">${raw(ui.rich('connectors.guide', code, { path: template.docs }))}</p>
        </section>`,
    )}`;
}

/** The form on /apps: pick a tool, enter its URL. */
export function connectorForm(ui: PageUi): SafeHtml {
  return html`<h2 id="connectors">${ui.t('connectors.form.heading')}</h2>
    <p class="muted">
      ${raw(ui.rich('connectors.form.intro', { link: (inner) => `<a href="/connectors">${inner}</a>` }))}
    </p>
    <form method="post" action="/apps/connectors">
      <label for="connector">${ui.t('connectors.form.tool')}</label>
      <select id="connector" name="connector" required>
        ${CONNECTORS.map((template) => html`<option value="${template.name}">${template.title}</option>`)}
      </select>
      <label for="connector_base_url">${ui.t('connectors.form.url')}</label>
      <input
        id="connector_base_url"
        name="base_url"
        type="url"
        inputmode="url"
        maxlength="500"
        aria-describedby="connector-url-help"
      />
      <p id="connector-url-help" class="muted">${ui.t('connectors.form.url_help', { example: 'https://grafana.example.com' })}</p>
      <label for="connector_upstream_url">${ui.t('connectors.form.upstream')}</label>
      <input id="connector_upstream_url" name="upstream_url" type="url" inputmode="url" maxlength="500" />
      <label for="connector_org">${ui.t('connectors.form.org')}</label>
      <input id="connector_org" name="org" type="text" maxlength="64" aria-describedby="connector-org-help" />
      <p id="connector-org-help" class="muted">${ui.t('connectors.form.org_help')}</p>
      <button type="submit">${ui.t('connectors.form.button')}</button>
    </form>`;
}

/** The answer on /apps: the new client (secret shown once) and the snippet to copy. */
export function connectorResultNotice(ui: PageUi, result: ConnectorResult): SafeHtml {
  const { client, issued } = result.change;
  return html`<div role="status" aria-labelledby="connector-result">
    <h2 id="connector-result">${ui.t('connectors.result.heading', { tool: result.template.title })}</h2>
    <p>${raw(ui.rich('apps.client_id', code, { id: client.clientId }))}</p>
    ${
      issued.clientSecret === undefined
        ? html`<p>${ui.t('connectors.result.public')}</p>`
        : html`<p>${raw(ui.rich('apps.secret_once', code, { secret: issued.clientSecret }))}</p>`
    }
    <p>
      ${ui.t('connectors.result.uris')} ${client.metadata.redirect_uris.map((uri, i) => html`${i > 0 ? ', ' : ''}<code>${uri}</code>`)}
    </p>
    <p>
      ${raw(
        ui.rich(
          'connectors.result.target',
          { strong: (inner) => `<strong>${inner}</strong>` },
          { target: result.snippet.target, format: result.snippet.format },
        ),
      )}
    </p>
    <pre
      tabindex="0"
      data-copy
      data-msg-copy="${ui.t('connectors.copy.button')}"
      data-msg-copied="${ui.t('connectors.copy.done')}"
      data-msg-copy-failed="${ui.t('connectors.copy.failed')}"
      aria-label="${ui.t('connectors.result.snippet_label', { tool: result.template.title })}"
    ><code data-snippet="${result.template.name}">${result.snippet.content}</code></pre>
    <p class="muted">${raw(ui.rich('connectors.result.secrets', code, { path: result.template.docs }))}</p>
  </div>`;
}
