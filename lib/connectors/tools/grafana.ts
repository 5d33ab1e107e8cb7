import { BASE_URL_INPUT, clientName, parseBaseUrl, type ConnectorTemplate } from '../connector.js';

/** Grafana's generic OAuth login (`[auth.generic_oauth]`); its callback is `<root_url>/login/generic_oauth`. */
export const grafana: ConnectorTemplate = {
  name: 'grafana',
  title: 'Grafana',
  docs: 'docs/connectors.md#grafana',
  inputs: [
    {
      ...BASE_URL_INPUT,
      description: "Grafana's root_url (the URL people open it at).",
      note: { key: 'connector.grafana.base_url', values: { setting: 'root_url' } },
      example: 'https://grafana.example.com',
    },
  ],
  pkce: '`use_pkce = true` (Grafana 8.3 and later).',
  pkceNote: { key: 'connector.grafana.pkce', values: { setting: 'use_pkce = true' } },
  registration(inputs) {
    const base = parseBaseUrl(inputs.base_url);
    return {
      client_name: clientName('Grafana', base),
      redirect_uris: [`${base}/login/generic_oauth`],
      grant_types: ['authorization_code'],
      scope: 'openid email profile',
      token_endpoint_auth_method: 'client_secret_basic',
    };
  },
  snippet({ issuer, clientId, clientSecret, inputs }) {
    const base = parseBaseUrl(inputs.base_url);
    return {
      format: 'ini',
      target: 'grafana.ini',
      content: `[server]
root_url = ${base}

[auth.generic_oauth]
enabled = true
name = Keyplane
allow_sign_up = true
client_id = ${clientId}
client_secret = ${clientSecret}
scopes = openid email profile
empty_scopes = false
auth_url = ${issuer}/auth/authorize
token_url = ${issuer}/auth/token
api_url = ${issuer}/auth/userinfo
auth_style = InHeader
use_pkce = true
login_attribute_path = preferred_username
name_attribute_path = name
email_attribute_path = email
signout_redirect_url = ${issuer}/auth/logout
`,
    };
  },
};
