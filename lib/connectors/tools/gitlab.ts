import { BASE_URL_INPUT, clientName, doubleQuoted, parseBaseUrl, type ConnectorTemplate } from '../connector.js';

/** GitLab's OmniAuth OpenID Connect provider; its callback is `/users/auth/openid_connect/callback`. */
export const gitlab: ConnectorTemplate = {
  name: 'gitlab',
  title: 'GitLab',
  docs: 'docs/connectors.md#gitlab',
  inputs: [
    {
      ...BASE_URL_INPUT,
      description: "GitLab's external_url.",
      note: { key: 'connector.gitlab.base_url', values: { setting: 'external_url' } },
      example: 'https://gitlab.example.com',
    },
  ],
  pkce: "`pkce: true` in the provider's args (omniauth_openid_connect with PKCE support).",
  pkceNote: { key: 'connector.gitlab.pkce', values: { setting: 'pkce: true' } },
  registration(inputs) {
    const base = parseBaseUrl(inputs.base_url);
    return {
      client_name: clientName('GitLab', base),
      redirect_uris: [`${base}/users/auth/openid_connect/callback`],
      grant_types: ['authorization_code'],
      scope: 'openid email profile',
      token_endpoint_auth_method: 'client_secret_basic',
    };
  },
  snippet({ issuer, clientId, clientSecret, inputs }) {
    const base = parseBaseUrl(inputs.base_url);
    const q = doubleQuoted;
    return {
      format: 'ruby',
      target: '/etc/gitlab/gitlab.rb',
      content: `gitlab_rails['omniauth_allow_single_sign_on'] = ['openid_connect']
gitlab_rails['omniauth_block_auto_created_users'] = true
gitlab_rails['omniauth_providers'] = [
  {
    name: "openid_connect",
    label: "Keyplane",
    args: {
      name: "openid_connect",
      scope: ["openid", "profile", "email"],
      response_type: "code",
      issuer: ${q(issuer)},
      discovery: true,
      client_auth_method: "basic",
      uid_field: "sub",
      pkce: true,
      client_options: {
        identifier: ${q(clientId)},
        secret: ${q(clientSecret ?? '')},
        redirect_uri: ${q(`${base}/users/auth/openid_connect/callback`)}
      }
    }
  }
]
`,
    };
  },
};
