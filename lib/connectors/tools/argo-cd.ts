import { BASE_URL_INPUT, clientName, parseBaseUrl, type ConnectorTemplate } from '../connector.js';

/**
 * Argo CD's own OIDC login (`oidc.config` in argocd-cm, no Dex); its callback is `<url>/auth/callback`.
 * The secret goes into argocd-secret and oidc.config refers to it as `$oidc.keyplane.clientSecret`.
 */
export const argoCd: ConnectorTemplate = {
  name: 'argo-cd',
  title: 'Argo CD',
  docs: 'docs/connectors.md#argo-cd',
  inputs: [
    {
      ...BASE_URL_INPUT,
      description: "Argo CD's `url` in argocd-cm.",
      note: { key: 'connector.argo_cd.base_url', values: { setting: 'url' } },
      example: 'https://argocd.example.com',
    },
  ],
  pkce: '`enablePKCEAuthentication: true` in oidc.config (a version where argocd-server keeps the verifier).',
  pkceNote: { key: 'connector.argo_cd.pkce', values: { setting: 'enablePKCEAuthentication: true' } },
  registration(inputs) {
    const base = parseBaseUrl(inputs.base_url);
    return {
      client_name: clientName('Argo CD', base),
      redirect_uris: [`${base}/auth/callback`],
      grant_types: ['authorization_code'],
      scope: 'openid email profile',
      token_endpoint_auth_method: 'client_secret_basic',
    };
  },
  snippet({ issuer, clientId, clientSecret, inputs }) {
    const base = parseBaseUrl(inputs.base_url);
    const j = JSON.stringify;
    return {
      format: 'yaml',
      target: 'argocd-cm and argocd-secret (kubectl apply -n argocd -f -)',
      content: `apiVersion: v1
kind: Secret
metadata:
  name: argocd-secret
  labels:
    app.kubernetes.io/part-of: argocd
stringData:
  oidc.keyplane.clientSecret: ${j(clientSecret ?? '')}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  labels:
    app.kubernetes.io/part-of: argocd
data:
  url: ${j(base)}
  oidc.config: |
    name: Keyplane
    issuer: ${j(issuer)}
    clientID: ${j(clientId)}
    clientSecret: $oidc.keyplane.clientSecret
    requestedScopes: ["openid", "profile", "email"]
    requestedIDTokenClaims: {"email": {"essential": true}}
    enablePKCEAuthentication: true
`,
    };
  },
};
