import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  CONNECTORS,
  connectorSnippet,
  describeConnector,
  findConnector,
  planConnector,
} from '#lib/connectors/catalog.js';
import { parseBaseUrl, type Snippet } from '#lib/connectors/connector.js';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { reasonOf } from '../../helpers/reason-of.js';

const ISSUER = 'https://id.example.com';
const SECRET = 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA';
const TOOL_SECRET = Buffer.alloc(32, 7).toString('base64url');
const APACHE_MODULE = '/usr/lib/apache2/modules/mod_auth_openidc.so';

function examples(name: string): Record<string, string> {
  return Object.fromEntries(
    findConnector(name)
      .inputs.filter((i) => i.required)
      .map((i) => [i.name, i.example!]),
  );
}

function build(name: string, inputs = examples(name)) {
  const plan = planConnector(name, inputs);
  const metadata = validateClientMetadata(plan.registration);
  const snippet = connectorSnippet(plan.template, {
    issuer: ISSUER,
    clientId: 'cl_test',
    ...(metadata.token_endpoint_auth_method === 'none' ? {} : { clientSecret: SECRET }),
    toolSecret: TOOL_SECRET,
    inputs: plan.inputs,
  });
  return { ...plan, metadata, snippet };
}

/** ini as Grafana reads it: sections and `key = value` lines. */
function parseIni(text: string): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  let section = '';
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith(';') || line.startsWith('#')) continue;
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      out[section] = {};
      continue;
    }
    const pair = /^([a-z_]+) = (.*)$/.exec(line);
    if (!pair) throw new Error(`not an ini line: ${line}`);
    out[section]![pair[1]!] = pair[2]!;
  }
  return out;
}

t.test('every connector builds a registration that client registration accepts, with PKCE documented', async (t) => {
  t.same(
    CONNECTORS.map((c) => c.name),
    ['grafana', 'gitlab', 'argo-cd', 'nextcloud', 'outline', 'kubelogin', 'apache', 'oauth2-proxy'],
  );
  for (const template of CONNECTORS) {
    const { metadata, snippet } = build(template.name);
    t.ok(metadata.redirect_uris.length > 0, `${template.name}: redirect URIs`);
    t.match(metadata.scope, /^openid\b/, `${template.name}: openid scope`);
    t.ok(metadata.grant_types.includes('authorization_code'));
    t.ok(template.pkce.length > 0, `${template.name}: PKCE note`);
    t.ok(snippet.content.includes('cl_test'), `${template.name}: client id in the snippet`);
    t.ok(snippet.content.includes(ISSUER), `${template.name}: issuer in the snippet`);
    if (metadata.token_endpoint_auth_method !== 'none')
      t.ok(snippet.content.includes(SECRET), `${template.name}: secret in the snippet`);
    t.match(describeConnector(template), { name: template.name, title: String, docs: /^docs\/connectors\.md#/ });
  }
});

t.test('each tool gets its exact callback path and auth method', async (t) => {
  const expect: Record<string, [string[], string]> = {
    grafana: [['https://grafana.example.com/login/generic_oauth'], 'client_secret_basic'],
    gitlab: [['https://gitlab.example.com/users/auth/openid_connect/callback'], 'client_secret_basic'],
    'argo-cd': [['https://argocd.example.com/auth/callback'], 'client_secret_basic'],
    nextcloud: [
      ['https://cloud.example.com/apps/user_oidc/code', 'https://cloud.example.com/index.php/apps/user_oidc/code'],
      'client_secret_post',
    ],
    outline: [['https://wiki.example.com/auth/oidc.callback'], 'client_secret_post'],
    kubelogin: [['http://localhost:8000', 'http://localhost:18000'], 'none'],
    apache: [['https://app.example.com/redirect_uri'], 'client_secret_basic'],
    'oauth2-proxy': [['https://app.example.com/oauth2/callback'], 'client_secret_basic'],
  };
  for (const [name, [uris, method]] of Object.entries(expect)) {
    const { metadata } = build(name);
    t.same(metadata.redirect_uris, uris, name);
    t.equal(metadata.token_endpoint_auth_method, method, name);
  }
  t.same(
    build('outline').metadata.grant_types,
    ['authorization_code', 'refresh_token'],
    'Outline expects a refresh token',
  );
  t.match(build('kubelogin').metadata.scope, /offline_access/);
  t.same(
    build('grafana', { base_url: 'https://ops.example.com/grafana/' }).metadata.redirect_uris,
    ['https://ops.example.com/grafana/login/generic_oauth'],
    'a sub-path, trailing slash dropped',
  );
});

t.test("Grafana: grafana.ini with PKCE and Keyplane's endpoints", async (t) => {
  const { snippet } = build('grafana');
  t.equal(snippet.format, 'ini');
  const ini = parseIni(snippet.content);
  t.match(ini['auth.generic_oauth'], {
    enabled: 'true',
    client_id: 'cl_test',
    client_secret: SECRET,
    use_pkce: 'true',
    auth_style: 'InHeader',
    auth_url: `${ISSUER}/auth/authorize`,
    token_url: `${ISSUER}/auth/token`,
    api_url: `${ISSUER}/auth/userinfo`,
    scopes: 'openid email profile',
  });
  t.equal(ini['server']!['root_url'], 'https://grafana.example.com');
});

t.test('Argo CD and kubelogin: YAML that parses, with the values in place', async (t) => {
  const argo = build('argo-cd').snippet;
  const docs = parseAllDocuments(argo.content).map((d) => d.toJS() as Record<string, any>);
  t.equal(docs.length, 2);
  t.match(docs[0], {
    kind: 'Secret',
    metadata: { name: 'argocd-secret' },
    stringData: { 'oidc.keyplane.clientSecret': SECRET },
  });
  t.match(docs[1], { kind: 'ConfigMap', metadata: { name: 'argocd-cm' }, data: { url: 'https://argocd.example.com' } });
  const oidc = parseAllDocuments(docs[1]!.data['oidc.config'])[0]!.toJS() as Record<string, unknown>;
  t.match(oidc, {
    issuer: ISSUER,
    clientID: 'cl_test',
    clientSecret: '$oidc.keyplane.clientSecret',
    enablePKCEAuthentication: true,
    requestedScopes: ['openid', 'profile', 'email'],
  });

  const kube = parseAllDocuments(build('kubelogin').snippet.content)[0]!.toJS() as Record<string, any>;
  const exec = kube.users[0].user.exec;
  t.equal(exec.command, 'kubectl');
  t.same(exec.args.slice(0, 4), ['oidc-login', 'get-token', `--oidc-issuer-url=${ISSUER}`, '--oidc-client-id=cl_test']);
  t.notOk(
    exec.args.some((a: string) => a.includes('client-secret')),
    'a public client has no secret',
  );
});

t.test(
  'Nextcloud: a shell script that parses, quoting every value',
  { skip: existsSync('/bin/bash') ? false : 'no bash' },
  async (t) => {
    const { snippet } = build('nextcloud');
    t.equal(snippet.format, 'shell');
    t.equal(spawnSync('/bin/bash', ['-n'], { input: snippet.content }).status, 0, 'bash -n accepts it');
    t.match(snippet.content, /occ user_oidc:provider Keyplane/);
    t.match(snippet.content, /--discoveryuri='https:\/\/id\.example\.com\/\.well-known\/openid-configuration'/);
    t.match(snippet.content, /user_oidc use_pkce --type=boolean --value=true/);
  },
);

t.test('Outline: env lines; oauth2-proxy: TOML lines; GitLab: balanced Ruby with pkce', async (t) => {
  const env = Object.fromEntries(
    build('outline')
      .snippet.content.trim()
      .split('\n')
      .map((line) => {
        const match = /^([A-Z_]+)=(.*)$/.exec(line);
        if (!match) throw new Error(`not an env line: ${line}`);
        return [match[1]!, match[2]!];
      }),
  );
  t.match(env, {
    URL: 'https://wiki.example.com',
    OIDC_CLIENT_ID: 'cl_test',
    OIDC_CLIENT_SECRET: SECRET,
    OIDC_ISSUER_URL: ISSUER,
  });
  t.match(env['OIDC_SCOPES'], /offline_access/);

  const proxy = build('oauth2-proxy', {
    base_url: 'https://app.example.com',
    upstream_url: 'http://127.0.0.1:3000/',
  }).snippet;
  const toml: Record<string, unknown> = {};
  for (const line of proxy.content.trim().split('\n')) {
    const match = /^([a-z_]+) = (.+)$/.exec(line);
    if (!match) throw new Error(`not a TOML line: ${line}`);
    toml[match[1]!] = JSON.parse(match[2]!);
  }
  t.match(toml, {
    provider: 'oidc',
    oidc_issuer_url: ISSUER,
    client_id: 'cl_test',
    client_secret: SECRET,
    code_challenge_method: 'S256',
    redirect_url: 'https://app.example.com/oauth2/callback',
    cookie_secret: TOOL_SECRET,
    cookie_secure: true,
    upstreams: ['http://127.0.0.1:3000/'],
  });
  t.equal(Buffer.from(TOOL_SECRET, 'base64url').length, 32, 'oauth2-proxy wants a 32-byte cookie secret');

  const ruby = build('gitlab').snippet.content;
  for (const [open, close] of [
    ['[', ']'],
    ['{', '}'],
    ['(', ')'],
  ] as const)
    t.equal(ruby.split(open).length, ruby.split(close).length, `balanced ${open}${close}`);
  t.match(ruby, /pkce: true/);
  t.match(ruby, /identifier: "cl_test"/);
  t.match(ruby, /redirect_uri: "https:\/\/gitlab\.example\.com\/users\/auth\/openid_connect\/callback"/);
});

t.test(
  'Apache: the directives pass apache2 -t with mod_auth_openidc loaded',
  { skip: existsSync(APACHE_MODULE) ? false : 'mod_auth_openidc not installed' },
  async (t) => {
    const { snippet } = build('apache', { base_url: 'https://app.example.com/private' });
    t.match(snippet.content, /<Location "\/private">/);
    t.match(snippet.content, /OIDCPKCEMethod S256/);
    const dir = mkdtempSync(join(tmpdir(), 'kp-apache-t-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      join(dir, 'httpd.conf'),
      `ServerRoot ${dir}
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule authz_user_module /usr/lib/apache2/modules/mod_authz_user.so
LoadModule authn_core_module /usr/lib/apache2/modules/mod_authn_core.so
LoadModule auth_openidc_module ${APACHE_MODULE}
Listen 127.0.0.1:1
PidFile ${dir}/httpd.pid
ErrorLog ${dir}/error.log
${snippet.content}`,
    );
    const out = execFileSync('/usr/sbin/apache2', ['-t', '-f', join(dir, 'httpd.conf')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.ok(out !== undefined, 'Syntax OK');
  },
);

t.test('refuses unknown connectors and bad inputs with a reason', async (t) => {
  t.equal(
    reasonOf(() => findConnector('jenkins')),
    'unknown_connector',
  );
  const bad: [string, unknown][] = [
    ['grafana', {}],
    ['grafana', { base_url: 'http://grafana.example.com' }],
    ['grafana', { base_url: 'ftp://grafana.example.com' }],
    ['grafana', { base_url: 'grafana.example.com' }],
    ['grafana', { base_url: 'https://grafana.example.com/?x=1' }],
    ['grafana', { base_url: 'https://grafana.example.com/#top' }],
    ['grafana', { base_url: 'https://user:pw@grafana.example.com' }],
    ['grafana', { base_url: "https://grafana.example.com/a'b" }],
    ['grafana', { base_url: 'https://grafana.example.com/a b' }],
    ['grafana', { base_url: 42 }],
    ['grafana', { base_url: 'https://grafana.example.com', colour: 'blue' }],
    ['grafana', []],
    ['kubelogin', { base_url: 'https://k8s.example.com' }],
    ['oauth2-proxy', { base_url: 'https://app.example.com/sub' }],
    ['oauth2-proxy', { base_url: 'https://app.example.com', upstream_url: 'unix:/run/app.sock' }],
  ];
  for (const [name, body] of bad)
    t.equal(
      reasonOf(() => planConnector(name, body)),
      'invalid_connector_input',
      JSON.stringify(body),
    );
  t.equal(parseBaseUrl('http://localhost:3000/'), 'http://localhost:3000', 'http on loopback is fine');
  t.equal(parseBaseUrl('  https://Grafana.Example.com:8443/g  '), 'https://grafana.example.com:8443/g');
});

t.test('snippets are plain text with no template holes left', async (t) => {
  for (const template of CONNECTORS) {
    const snippet: Snippet = build(template.name).snippet;
    t.notMatch(snippet.content, /undefined|\$\{|<your|YOUR_/, template.name);
    t.ok(snippet.target.length > 0);
  }
});
