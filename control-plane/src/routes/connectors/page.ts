import { CONNECTORS } from '#lib/connectors/catalog.js';
import type { ConnectorTemplate } from '#lib/connectors/connector.js';
import { html, type SafeHtml } from '../../pages/layout.js';
import type { ConnectorResult } from '../../connectors/register-connector.js';

/** Server-rendered connector pieces: the catalogue page and the /apps section (no script needed). */

function inputList(template: ConnectorTemplate): SafeHtml {
  if (template.inputs.length === 0)
    return html`<p class="muted">Nothing to enter: the client runs on each person's machine.</p>`;
  return html`<ul>
    ${template.inputs.map((input) => html`<li><code>${input.name}</code>${input.required ? '' : ' (optional)'}: ${input.description}</li>`)}
  </ul>`;
}

export function connectorsPage(): SafeHtml {
  return html`<h1>Connectors</h1>
    <p>
      Ready-made OpenID Connect clients for common tools. Each one registers the exact client the tool needs and answers
      with the tool's own configuration, issuer, client ID and secret filled in. Register one on
      <a href="/apps#connectors">your apps page</a>, or with <code>POST /connectors/{name}</code>. Every client must use
      PKCE (S256).
    </p>
    ${CONNECTORS.map(
      (template) =>
        html`<section aria-labelledby="c-${template.name}">
          <h2 id="c-${template.name}">${template.title} <code>${template.name}</code></h2>
          ${inputList(template)}
          <p><strong>PKCE:</strong> ${template.pkce}</p>
          <p class="muted">Guide: <code>${template.docs}</code></p>
        </section>`,
    )}`;
}

/** The form on /apps: pick a tool, enter its URL. */
export function connectorForm(): SafeHtml {
  return html`<h2 id="connectors">Connect a tool</h2>
    <p class="muted">
      Registers a client for the tool and shows the configuration to paste into it (<a href="/connectors"
        >all connectors</a
      >).
    </p>
    <form method="post" action="/apps/connectors">
      <label for="connector">Tool</label>
      <select id="connector" name="connector" required>
        ${CONNECTORS.map((template) => html`<option value="${template.name}">${template.title}</option>`)}
      </select>
      <label for="connector_base_url">Tool URL</label>
      <input
        id="connector_base_url"
        name="base_url"
        type="url"
        inputmode="url"
        maxlength="500"
        aria-describedby="connector-url-help"
      />
      <p id="connector-url-help" class="muted">
        The URL people open the tool at, such as https://grafana.example.com. Kubernetes (kubelogin) needs none.
      </p>
      <label for="connector_upstream_url">Upstream URL (oauth2-proxy only, optional)</label>
      <input id="connector_upstream_url" name="upstream_url" type="url" inputmode="url" maxlength="500" />
      <label for="connector_org">Organization (optional)</label>
      <input id="connector_org" name="org" type="text" maxlength="64" aria-describedby="connector-org-help" />
      <p id="connector-org-help" class="muted">
        The slug of an organization you are an admin or owner of, to make it the owner; empty keeps the client yours.
      </p>
      <button type="submit">Register and show the configuration</button>
    </form>`;
}

/** The answer on /apps: the new client (secret shown once) and the snippet to copy. */
export function connectorResultNotice(result: ConnectorResult): SafeHtml {
  const { client, issued } = result.change;
  return html`<div role="status" aria-labelledby="connector-result">
    <h2 id="connector-result">${result.template.title} connected</h2>
    <p>Client ID: <code>${client.clientId}</code></p>
    ${issued.clientSecret === undefined ? html`<p>Public client: no secret (PKCE only).</p>` : html`<p>Client secret (shown once, copy it now): <code>${issued.clientSecret}</code></p>`}
    <p>
      Redirect URIs: ${client.metadata.redirect_uris.map((uri, i) => html`${i > 0 ? ', ' : ''}<code>${uri}</code>`)}
    </p>
    <p>Put this into <strong>${result.snippet.target}</strong> (${result.snippet.format}):</p>
    <pre
      tabindex="0"
      data-copy
      aria-label="${result.template.title} configuration"
    ><code data-snippet="${result.template.name}">${result.snippet.content}</code></pre>
    <p class="muted">
      The secrets in it are shown this once. Tool-side steps and limits: <code>${result.template.docs}</code>.
    </p>
  </div>`;
}
