import t from 'tap';
import { ESLint } from 'eslint';

// The layer arrows of docs/architecture.md#layout, enforced by eslint.config.js: each case lints
// one import as if it were written in the given file.
const eslint = new ESLint({ cwd: process.cwd() });

async function importErrors(filePath: string, specifier: string): Promise<string[]> {
  const [result] = await eslint.lintText(`import x from '${specifier}';\nexport default x;\n`, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

/** The same import written as `import('…')`, which no-restricted-imports alone does not see. */
async function dynamicImportErrors(filePath: string, specifier: string, quote = "'"): Promise<string[]> {
  const source = `export const load = () => import(${quote}${specifier}${quote});\n`;
  const [result] = await eslint.lintText(source, { filePath });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === 'keyplane/no-restricted-dynamic-imports')
    .map((m) => m.message);
}

const refused: Array<[string, string, RegExp]> = [
  ['lib/oauth/example.ts', '../../control-plane/src/app.js', /lib\/ imports nothing of ours but lib\//],
  ['lib/oauth/example.ts', '../../gateway/src/app.js', /pure parts live in lib\/gateway/],
  ['lib/oauth/example.ts', '../../cli/src/io.js', /lib\/ imports nothing of ours/],
  ['lib/oauth/example.ts', '../../config/load.js', /lib\/ imports nothing of ours/],
  ['lib/oauth/example.ts', 'fastify', /servers and storage stay outside/],
  ['gateway/src/example.ts', '../../control-plane/src/services.js', /over HTTP only/],
  ['control-plane/src/example.ts', '../../gateway/src/server.js', /does not import the CLI or the gateway service/],
  ['control-plane/src/routes/x/example.ts', '../../../../cli/src/demo/demo-app.js', /does not import the CLI/],
  [
    'cli/src/commands/example.ts',
    '../../../control-plane/src/storage/sqlite/index.js',
    /through the control plane's services/,
  ],
  [
    'cli/src/commands/example.ts',
    '../../../control-plane/src/storage/open-storage.js',
    /control-plane\/src\/operator-tasks/,
  ],
  ['cli/src/program.ts', '../../control-plane/src/storage/migration-error.js', /control-plane\/src\/operator-tasks/],
  ['cli/src/demo/example.ts', '../../../control-plane/src/clients/operator-client.js', /an allow-list/],
  ['cli/src/demo/example.ts', '../../../control-plane/src/context.js', /an area's modules/],
  ['cli/src/demo/example.ts', '../../../control-plane/src/operator-tasks/nested/database.js', /an allow-list/],
  ['cli/src/demo/example.ts', '../../../control-plane/src/servers.js', /an allow-list/],
  ['cli/src/commands/example.ts', '../../../control-plane/src/keys/key-ring.js', /never its storage, key ring/],
  ['cli/src/commands/example.ts', '../../../control-plane/src/ledger/audit-ledger.js', /never its storage, key ring/],
  ['control-plane/src/sessions/example.ts', 'fastify', /Operations .* never import fastify/],
  ['control-plane/src/accounts/example.ts', 'fastify-plugin', /never import fastify/],
  ['control-plane/src/accounts/example.ts', '@fastify/cookie', /never import fastify/],
  [
    'test/control-plane/oidc/example.test.ts',
    '../../../cli/src/commands/ledger.js',
    /Control-plane tests test the control plane/,
  ],
  ['control-plane/src/storage/sqlite/example.ts', 'better-sqlite3', /driver\.ts/],
  ['sdk/src/example.ts', '../../lib/dpop/verify-dpop-proof.js', /The SDK is published on its own/],
  ['test/control-plane/storage/example.test.ts', 'better-sqlite3', /driver\.ts/],
  // The shared layers by name (package.json imports), not by climbing; and still only where allowed.
  ['control-plane/src/routes/x/example.ts', '../../../../lib/errors/keyplane-error.js', /Import lib\/ by name/],
  ['gateway/src/example.ts', '../../config/types.js', /Import config\/ by name/],
  ['test/lib/oauth/example.test.ts', '../../../lib/oauth/client-metadata.js', /Import lib\/ by name/],
  ['lib/oauth/example.ts', '#config/types.js', /lib\/ imports nothing of ours but lib\//],
  ['sdk/src/example.ts', '#lib/oauth/client-metadata.js', /SDK is published on its own/],
];

for (const [file, specifier, message] of refused) {
  t.test(`refuses ${specifier} in ${file}`, async (t) => {
    const errors = await importErrors(file, specifier);
    t.equal(errors.length, 1, errors.join('; '));
    t.match(errors[0], message);
  });
  t.test(`refuses import('${specifier}') in ${file}`, async (t) => {
    for (const quote of ["'", '`']) {
      const errors = await dynamicImportErrors(file, specifier, quote);
      t.equal(errors.length, 1, errors.join('; '));
      t.match(errors[0], message);
    }
  });
}

const allowed: Array<[string, string]> = [
  ['lib/oauth/example.ts', '../gateway-protocol/policy.js'],
  ['lib/runtime/shared-state/example.ts', 'ioredis'],
  ['gateway/src/example.ts', '#lib/gateway-protocol/policy.js'],
  ['control-plane/src/routes/x/example.ts', '#lib/errors/keyplane-error.js'],
  ['cli/src/commands/example.ts', '#config/types.js'],
  ['test/lib/oauth/example.test.ts', '#lib/oauth/client-metadata.js'],
  ['cli/src/commands/example.ts', '../../../control-plane/src/server.js'],
  ['cli/src/commands/example.ts', '../../../control-plane/src/operator-tasks/database.js'],
  ['cli/src/demo/example.ts', '../../../control-plane/src/operator-tasks/operator-clients.js'],
  ['cli/src/commands/example.ts', '../../../control-plane/src/services.js'],
  ['control-plane/src/routes/x/example.ts', 'fastify'],
  ['control-plane/src/plugins/example.ts', 'fastify-plugin'],
  ['control-plane/src/http/example.ts', '@fastify/cookie'],
  ['control-plane/src/app.ts', 'fastify'],
  ['test/gateway/example.test.ts', '../../cli/src/demo/demo-app.js'],
  ['control-plane/src/storage/sqlite/driver.ts', 'better-sqlite3'],
  ['sdk/src/example.ts', './dpop.js'],
];

for (const [file, specifier] of allowed) {
  t.test(`allows ${specifier} in ${file}`, async (t) => {
    t.same(await importErrors(file, specifier), []);
    t.same(await dynamicImportErrors(file, specifier), [], 'as import() too');
  });
}

t.test('an import() whose specifier is computed is not judged', async (t) => {
  const source =
    "const where = 'storage';\nexport const load = () => import(`../../../control-plane/src/${where}/x.js`);\n";
  const [result] = await eslint.lintText(source, { filePath: 'cli/src/commands/example.ts' });
  t.same(
    (result?.messages ?? []).filter((m) => m.ruleId === 'keyplane/no-restricted-dynamic-imports'),
    [],
  );
});

t.test('files past 400 lines draw a max-lines warning', async (t) => {
  const long = Array.from({ length: 401 }, (_, i) => `export const v${i} = ${i};`).join('\n') + '\n';
  const [result] = await eslint.lintText(long, { filePath: 'lib/oauth/long.ts' });
  const warning = result?.messages.find((m) => m.ruleId === 'max-lines');
  t.equal(warning?.severity, 1, 'a warning, not an error');
});

// docs/architecture.md#layers: routes call operations; storage and transactions stay below them.
t.test('a route reaching storage or a transaction itself is refused', async (t) => {
  const source = [
    'export async function route(app: { kp: { storage: { clients: { get(id: string): Promise<unknown> } } } }) {',
    '  const { storage } = app.kp;',
    "  return [await app.kp.storage.clients.get('x'), storage];",
    '}',
    'export const inTx = (tx: { clients: unknown }) => tx.clients;',
  ].join('\n');
  const [result] = await eslint.lintText(source, { filePath: 'control-plane/src/routes/x/example.ts' });
  const refused = (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-syntax');
  t.equal(refused.length, 3, refused.map((m) => m.message).join('; '));
  t.match(refused[0]?.message ?? '', /docs\/architecture\.md#layers/);
  for (const edge of [
    'control-plane/src/plugins/example.ts',
    'control-plane/src/http/example.ts',
    'control-plane/src/pages/example.ts',
  ]) {
    const [found] = await eslint.lintText(source, { filePath: edge });
    t.equal(
      (found?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-syntax').length,
      3,
      `${edge}: plugins, http/ and pages/ reach storage through operations too`,
    );
  }
  const [operation] = await eslint.lintText(source, { filePath: 'control-plane/src/accounts/example.ts' });
  t.same(
    (operation?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-syntax'),
    [],
    'operations may',
  );
});

// docs/architecture.md#layers: only a plugin takes the fastify app; the rest takes services.
t.test('an exported function taking the fastify app is refused outside routes/ and plugins/', async (t) => {
  const source = [
    "import type { FastifyInstance } from 'fastify';",
    'export function declared(app: FastifyInstance): void { void app; }',
    'export const arrow = async (x: number, app: FastifyInstance) => { void app; return x; };',
    'export default function (app: FastifyInstance = {} as FastifyInstance) { void app; }',
    'function inner(app: FastifyInstance) { return app; }',
    'export const services = (kp: { config: unknown }) => kp.config;',
    'export { inner };',
  ].join('\n');
  const found = async (filePath: string) => {
    const [result] = await eslint.lintText(source, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'keyplane/no-app-parameter');
  };
  for (const file of [
    'control-plane/src/http/example.ts',
    'control-plane/src/pages/example.ts',
    'control-plane/src/accounts/example.ts',
  ]) {
    const refused = await found(file);
    t.equal(refused.length, 3, `${file}: the three exported functions that take the app`);
    t.match(refused[0]?.message ?? '', /Only routes\/ and plugins\/ take the fastify app/);
  }
  for (const file of ['control-plane/src/routes/x/example.ts', 'control-plane/src/plugins/example.ts'])
    t.same(await found(file), [], `${file} may`);
});

t.test("the gateway reads a request's cookies through its request scope", async (t) => {
  const source =
    "import { parseCookieHeader, cookieName } from '#lib/gateway-protocol/session-cookie.js';\nexport const a = [parseCookieHeader, cookieName];\n";
  const errors = async (filePath: string) => {
    const [result] = await eslint.lintText(source, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };
  const refused = await errors('gateway/src/page-flow.ts');
  t.equal(refused.length, 1, 'parseCookieHeader, not cookieName');
  t.match(refused[0] ?? '', /requestScope\(req\)/);
  t.same(await errors('gateway/src/request-scope.ts'), [], 'the scope itself may');
  t.same(await errors('lib/gateway-protocol/example.ts'), [], 'lib/ may');
});

t.test('the admin token is read only by the one guard', async (t) => {
  const source = [
    "import { presentsAdminToken, requireAdminToken } from '#lib/http/admin-token.js';",
    'type Kp = { config: { adminToken?: string } };',
    'export const a = (kp: Kp, h?: string) => presentsAdminToken(kp.config.adminToken, h);',
    'export const b = (kp: Kp, h?: string) => requireAdminToken(kp.config.adminToken, h);',
    "export const c = (kp: Kp, h?: string) => kp.config.adminToken === h?.slice('Bearer '.length);",
    'export const d = (kp: Kp) => { const { adminToken } = kp.config; return kp.config.adminToken ?? adminToken; };',
  ].join('\n');
  for (const file of ['control-plane/src/routes/x/example.ts', 'control-plane/src/clients/example.ts']) {
    const [result] = await eslint.lintText(source, { filePath: file });
    const refused = (result?.messages ?? []).filter((m) => m.ruleId === 'keyplane/one-admin-token-guard');
    t.equal(refused.length, 3, `${file}: the comparison, the destructuring and the read outside a guard`);
    t.match(refused[0]?.message ?? '', /lib\/http\/admin-token\.ts/);
  }
});

t.test('the referrer policy is set only by the security headers and the layout', async (t) => {
  const source = [
    'type R = { header(n: string, v: string): R; raw: { setHeader(n: string, v: string): void } };',
    "export const a = (reply: R) => reply.header('Referrer-Policy', 'same-origin');",
    "export const b = (reply: R) => reply.raw.setHeader('referrer-policy', 'same-origin');",
    'export const c = (page: string) => page.replace(\'<meta name="referrer" content="no-referrer">\', \'\');',
    "export const d = (reply: R) => reply.header('cache-control', 'no-store');",
  ].join('\n');
  const found = async (filePath: string) => {
    const [result] = await eslint.lintText(source, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'keyplane/one-referrer-policy');
  };
  const refused = await found('control-plane/src/routes/x/example.ts');
  t.equal(refused.length, 3, 'two headers and the meta tag rewrite');
  t.match(refused[0]?.message ?? '', /config\.sameOriginReferrer/);
  for (const file of ['control-plane/src/plugins/security-headers.ts', 'control-plane/src/pages/layout.ts'])
    t.same(await found(file), [], `${file} may`);
});

// docs/errors.md#one-error-path: one writer of the envelope per service, one maker of `rate_limited`.
t.test('the envelope is written only by the errors plugin and the gateway respond module', async (t) => {
  const source = [
    "export const envelope = { ok: false, reason: 'not_found', message: 'no such thing' };",
    "export const outcome = { ok: false, failed: 'upstream_timeout' };",
  ].join('\n');
  const found = async (filePath: string) => {
    const [result] = await eslint.lintText(source, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'keyplane/one-error-path');
  };
  for (const file of ['control-plane/src/routes/x/example.ts', 'gateway/src/example.ts']) {
    const refused = await found(file);
    t.equal(refused.length, 1, `${file}: the envelope literal, not the other result`);
    t.match(refused[0]?.message ?? '', /Throw a KeyplaneError/);
  }
  for (const file of ['control-plane/src/plugins/errors.ts', 'gateway/src/respond.ts', 'cli/src/commands/example.ts'])
    t.same(await found(file), [], `${file} may`);
});

t.test('rate_limited is raised only through lib/errors/rate-limited.ts', async (t) => {
  const source = [
    "import { fail, KeyplaneError } from '#lib/errors/keyplane-error.js';",
    "export const a = fail('rate_limited', 'slow down');",
    "export const b = new KeyplaneError('rate_limited');",
    "export const c = fail('not_found');",
  ].join('\n');
  const found = async (filePath: string) => {
    const [result] = await eslint.lintText(source, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'keyplane/one-error-path');
  };
  for (const file of ['control-plane/src/contact/example.ts', 'gateway/src/example.ts', 'lib/oauth/example.ts']) {
    const refused = await found(file);
    t.equal(refused.length, 2, file);
    t.match(refused[0]?.message ?? '', /rateLimited\(\) or enforceLimit\(\)/);
  }
  t.same(await found('lib/errors/rate-limited.ts'), [], 'the one place may');
});
