import { BASE_URL_INPUT, clientName, parseBaseUrl, type ConnectorTemplate } from '../connector.js';

/**
 * Outline's OIDC plugin; its callback is `<URL>/auth/oidc.callback`. Outline keeps the refresh
 * token and expects one, so offline_access is registered. It sends the secret in the body.
 */
export const outline: ConnectorTemplate = {
  name: 'outline',
  title: 'Outline',
  docs: 'docs/connectors.md#outline',
  inputs: [
    {
      ...BASE_URL_INPUT,
      description: "Outline's URL environment variable.",
      note: { key: 'connector.outline.base_url', values: { setting: 'URL' } },
      example: 'https://wiki.example.com',
    },
  ],
  pkce: 'Only an Outline that reads its endpoints from OIDC_ISSUER_URL (discovery) turns PKCE on; older versions never send a code_challenge and are refused.',
  pkceNote: { key: 'connector.outline.pkce', values: { setting: 'OIDC_ISSUER_URL' } },
  registration(inputs) {
    const base = parseBaseUrl(inputs.base_url);
    return {
      client_name: clientName('Outline', base),
      redirect_uris: [`${base}/auth/oidc.callback`],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email profile offline_access',
      token_endpoint_auth_method: 'client_secret_post',
    };
  },
  snippet({ issuer, clientId, clientSecret, inputs }) {
    const base = parseBaseUrl(inputs.base_url);
    return {
      format: 'env',
      target: "Outline's environment (.env)",
      content: `URL=${base}
OIDC_CLIENT_ID=${clientId}
OIDC_CLIENT_SECRET=${clientSecret}
OIDC_ISSUER_URL=${issuer}
OIDC_LOGOUT_URI=${issuer}/auth/logout
OIDC_USERNAME_CLAIM=preferred_username
OIDC_DISPLAY_NAME=Keyplane
OIDC_SCOPES=openid offline_access profile email
`,
    };
  },
};
