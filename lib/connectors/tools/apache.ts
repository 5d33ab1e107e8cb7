import { BASE_URL_INPUT, clientName, doubleQuoted, parseBaseUrl, type ConnectorTemplate } from '../connector.js';

/**
 * Apache httpd with mod_auth_openidc. The redirect URI is a vanity URL inside the protected
 * location (`<base>/redirect_uri`), which the module answers itself.
 */
export const apache: ConnectorTemplate = {
  name: 'apache',
  title: 'Apache httpd (mod_auth_openidc)',
  docs: 'docs/connectors.md#apache-mod_auth_openidc',
  inputs: [
    {
      ...BASE_URL_INPUT,
      description: 'The URL of what Apache should protect; its path becomes the protected <Location>.',
      note: { key: 'connector.apache.base_url', values: { setting: '<Location>' } },
      example: 'https://app.example.com',
    },
  ],
  pkce: '`OIDCPKCEMethod S256`.',
  pkceNote: { key: 'connector.apache.pkce', values: { setting: 'OIDCPKCEMethod S256' } },
  registration(inputs) {
    const base = parseBaseUrl(inputs.base_url);
    return {
      client_name: clientName('Apache', base),
      redirect_uris: [`${base}/redirect_uri`],
      grant_types: ['authorization_code'],
      scope: 'openid email profile',
      token_endpoint_auth_method: 'client_secret_basic',
    };
  },
  snippet({ issuer, clientId, clientSecret, toolSecret, inputs }) {
    const base = parseBaseUrl(inputs.base_url);
    const location = new URL(base).pathname.replace(/\/+$/, '') || '/';
    const q = doubleQuoted;
    return {
      format: 'apache',
      target: 'the VirtualHost (a2enmod auth_openidc)',
      content: `OIDCProviderMetadataURL ${q(`${issuer}/.well-known/openid-configuration`)}
OIDCClientID ${q(clientId)}
OIDCClientSecret ${q(clientSecret ?? '')}
OIDCRedirectURI ${q(`${base}/redirect_uri`)}
OIDCCryptoPassphrase ${q(toolSecret)}
OIDCScope "openid email profile"
OIDCPKCEMethod S256
OIDCProviderTokenEndpointAuth client_secret_basic
OIDCRemoteUserClaim sub
<Location ${q(location)}>
  AuthType openid-connect
  Require valid-user
</Location>
`,
    };
  },
};
