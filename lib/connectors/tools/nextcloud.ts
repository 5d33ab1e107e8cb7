import { BASE_URL_INPUT, clientName, parseBaseUrl, shellQuoted, type ConnectorTemplate } from '../connector.js';

/**
 * Nextcloud's user_oidc app ("OpenID Connect user backend"). Its callback is
 * `/apps/user_oidc/code`, or `/index.php/apps/user_oidc/code` without pretty URLs: both are
 * registered, since redirect URIs match exactly. user_oidc sends the secret in the body.
 */
export const nextcloud: ConnectorTemplate = {
  name: 'nextcloud',
  title: 'Nextcloud (user_oidc)',
  docs: 'docs/connectors.md#nextcloud',
  inputs: [
    {
      ...BASE_URL_INPUT,
      description: "Nextcloud's overwrite.cli.url (the URL people open it at).",
      note: { key: 'connector.nextcloud.base_url', values: { setting: 'overwrite.cli.url' } },
      example: 'https://cloud.example.com',
    },
  ],
  pkce: "`'user_oidc' => ['use_pkce' => true]` in config.php (set by the snippet's second command).",
  pkceNote: { key: 'connector.nextcloud.pkce', values: { setting: "'user_oidc' => ['use_pkce' => true]" } },
  registration(inputs) {
    const base = parseBaseUrl(inputs.base_url);
    return {
      client_name: clientName('Nextcloud', base),
      redirect_uris: [`${base}/apps/user_oidc/code`, `${base}/index.php/apps/user_oidc/code`],
      grant_types: ['authorization_code'],
      scope: 'openid email profile',
      token_endpoint_auth_method: 'client_secret_post',
    };
  },
  snippet({ issuer, clientId, clientSecret }) {
    const q = shellQuoted;
    return {
      format: 'shell',
      target: 'a shell on the Nextcloud server, in its installation directory',
      content: `sudo -u www-data php occ app:enable user_oidc
sudo -u www-data php occ config:system:set user_oidc use_pkce --type=boolean --value=true
sudo -u www-data php occ user_oidc:provider Keyplane \\
  --clientid=${q(clientId)} \\
  --clientsecret=${q(clientSecret ?? '')} \\
  --discoveryuri=${q(`${issuer}/.well-known/openid-configuration`)} \\
  --scope=${q('openid email profile')} \\
  --mapping-display-name=name \\
  --mapping-email=email
`,
    };
  },
};
