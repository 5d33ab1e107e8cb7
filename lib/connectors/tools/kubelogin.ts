import type { ConnectorTemplate } from '../connector.js';

/**
 * kubectl with the kubelogin plugin (`kubectl oidc-login`): a public client on the person's own
 * machine. kubelogin listens on localhost:8000, or 18000 when that port is taken (RFC 8252
 * §7.3 loopback redirect); both are registered because redirect URIs match exactly.
 */
export const KUBELOGIN_REDIRECTS = ['http://localhost:8000', 'http://localhost:18000'];

export const kubelogin: ConnectorTemplate = {
  name: 'kubelogin',
  title: 'Kubernetes (kubectl with kubelogin)',
  docs: 'docs/connectors.md#kubernetes-kubelogin',
  inputs: [],
  pkce: 'kubelogin reads code_challenge_methods_supported from discovery and uses S256 (--oidc-pkce-method auto).',
  pkceNote: {
    key: 'connector.kubelogin.pkce',
    values: { setting: 'code_challenge_methods_supported', flag: '--oidc-pkce-method auto' },
  },
  registration() {
    return {
      client_name: 'Kubernetes (kubelogin)',
      redirect_uris: [...KUBELOGIN_REDIRECTS],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email profile offline_access',
      token_endpoint_auth_method: 'none',
    };
  },
  snippet({ issuer, clientId }) {
    const j = JSON.stringify;
    return {
      format: 'yaml',
      target:
        '~/.kube/config (the users entry; then: kubectl config set-context keyplane --cluster=<cluster> --user=keyplane)',
      content: `# kube-apiserver flags: --oidc-issuer-url=${issuer} --oidc-client-id=${clientId}
#   --oidc-username-claim=sub --oidc-username-prefix=keyplane:
apiVersion: v1
kind: Config
users:
  - name: keyplane
    user:
      exec:
        apiVersion: client.authentication.k8s.io/v1beta1
        command: kubectl
        args:
          - oidc-login
          - get-token
          - ${j(`--oidc-issuer-url=${issuer}`)}
          - ${j(`--oidc-client-id=${clientId}`)}
          - --oidc-extra-scope=email
          - --oidc-extra-scope=profile
          - --oidc-extra-scope=offline_access
        interactiveMode: IfAvailable
`,
    };
  },
};
