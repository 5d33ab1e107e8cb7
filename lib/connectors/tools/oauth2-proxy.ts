import { fail } from '../../errors/keyplane-error.js';
import { BASE_URL_INPUT, clientName, parseBaseUrl, type ConnectorTemplate } from '../connector.js';

/**
 * oauth2-proxy in front of an app, with its `oidc` provider; its callback is
 * `<origin>/oauth2/callback` (the default proxy prefix), so the URL is an origin without a path.
 */
function origin(value: string | undefined): string {
  const base = parseBaseUrl(value);
  if (new URL(base).pathname !== '/' && new URL(base).pathname !== '') {
    throw fail('invalid_connector_input', 'base_url must be the origin oauth2-proxy answers at, without a path');
  }
  return new URL(base).origin;
}

function upstream(value: string | undefined): string {
  if (value === undefined) return 'http://127.0.0.1:8080/';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw fail('invalid_connector_input', 'upstream_url must be an absolute http(s) URL');
  }
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.username !== '' ||
    url.search !== '' ||
    url.hash !== '' ||
    !/^[A-Za-z0-9._~/%:[\]-]+$/.test(url.href)
  ) {
    throw fail(
      'invalid_connector_input',
      'upstream_url must be an http(s) URL without user information, query or fragment',
    );
  }
  return url.href;
}

export const oauth2Proxy: ConnectorTemplate = {
  name: 'oauth2-proxy',
  title: 'oauth2-proxy',
  docs: 'docs/connectors.md#oauth2-proxy',
  inputs: [
    {
      ...BASE_URL_INPUT,
      description: 'The origin oauth2-proxy answers at (no path).',
      note: { key: 'connector.oauth2_proxy.base_url' },
      example: 'https://app.example.com',
    },
    {
      name: 'upstream_url',
      label: 'Upstream URL',
      description: 'The app oauth2-proxy forwards to (default http://127.0.0.1:8080/).',
      note: { key: 'connector.oauth2_proxy.upstream_url', values: { example: 'http://127.0.0.1:8080/' } },
      required: false,
      example: 'http://127.0.0.1:8080/',
    },
  ],
  pkce: '`code_challenge_method = "S256"`.',
  pkceNote: { key: 'connector.oauth2_proxy.pkce', values: { setting: 'code_challenge_method = "S256"' } },
  registration(inputs) {
    const base = origin(inputs.base_url);
    upstream(inputs.upstream_url);
    return {
      client_name: clientName('oauth2-proxy', base),
      redirect_uris: [`${base}/oauth2/callback`],
      grant_types: ['authorization_code'],
      scope: 'openid email profile',
      token_endpoint_auth_method: 'client_secret_basic',
    };
  },
  snippet({ issuer, clientId, clientSecret, toolSecret, inputs }) {
    const base = origin(inputs.base_url);
    const j = JSON.stringify;
    return {
      format: 'toml',
      target: 'oauth2-proxy.cfg (oauth2-proxy --config oauth2-proxy.cfg)',
      content: `provider = "oidc"
provider_display_name = "Keyplane"
oidc_issuer_url = ${j(issuer)}
client_id = ${j(clientId)}
client_secret = ${j(clientSecret ?? '')}
redirect_url = ${j(`${base}/oauth2/callback`)}
scope = "openid email profile"
code_challenge_method = "S256"
email_domains = ["*"]
cookie_secret = ${j(toolSecret)}
cookie_secure = ${base.startsWith('https:') ? 'true' : 'false'}
upstreams = [${j(upstream(inputs.upstream_url))}]
`,
    };
  },
};
