// ESLint flat config: typescript-eslint's recommended rules plus the layer boundaries of
// docs/architecture.md#layout as import rules. See docs/platform.md#lint.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Import specifiers are matched as written (relative paths, or `#lib/…` and `#config/…` for the
 * shared layers), so each pattern names a top-level folder by a segment that exists nowhere below the folder it guards: `gateway/src/` is the
 * gateway service, while `lib/gateway-protocol/` (its pure parts) stays importable from lib/.
 */
const boundary = (regex, message) => ({ regex, message });

const NO_SERVICES_IN_LIB = [
  boundary(
    '(^|/|#)(control-plane|cli|config|bench|test)/',
    'lib/ imports nothing of ours but lib/ (docs/architecture.md#layout).',
  ),
  boundary(
    '(^|/)gateway/src/',
    "lib/ imports nothing of ours but lib/; the gateway's pure parts live in lib/gateway-protocol/.",
  ),
];
const NO_CONTROL_PLANE_IN_GATEWAY = [
  boundary(
    '(^|/)(control-plane|cli)/',
    'The gateway talks to the control plane over HTTP only (docs/architecture.md#layout).',
  ),
];
const NO_GATEWAY_OR_CLI_IN_CONTROL_PLANE = [
  boundary(
    '(^|/)(cli|gateway/src)/',
    'The control plane does not import the CLI or the gateway service; shared parts go into lib/.',
  ),
];
/**
 * What the CLI may import of the control plane, as an allow-list: its operations, the server and
 * the services; anything else (storage, key ring, ledger, an area's modules) is refused.
 */
const CLI_ALLOWED_CONTROL_PLANE = ['src/operator-tasks/[\\w-]+', 'src/server', 'src/services'];
const NO_STORAGE_FROM_CLI = [
  boundary(
    `(^|/)control-plane/(?!(${CLI_ALLOWED_CONTROL_PLANE.join('|')})\\.js$)`,
    "The CLI reaches the control plane through the control plane's services (control-plane/src/operator-tasks/, server.ts, services.ts: an allow-list) or HTTP, never its storage, key ring, ledger or an area's modules (docs/architecture.md#layout).",
  ),
];
const NO_CLI_IN_CONTROL_PLANE_TESTS = [
  boundary(
    '(^|/)cli/',
    'Control-plane tests test the control plane: what they need from the CLI belongs in the control plane or lib/.',
  ),
];

const NO_SERVER_CODE_IN_SDK = [
  boundary(
    '(^|/|#)(lib|control-plane|gateway|cli|config)/',
    'The SDK is published on its own: it imports nothing of ours outside sdk/ (relying parties install only it).',
  ),
];

/** Outside their own folders, the shared layers are imported by name (package.json `imports`), not by climbing. */
const SHARED_LAYERS_BY_NAME = [
  boundary(
    '^(\\.\\./)+lib/',
    'Import lib/ by name: `#lib/…` (package.json imports), not `../../lib/…` (docs/architecture.md#layout).',
  ),
  boundary(
    '^(\\.\\./)+config/',
    'Import config/ by name: `#config/…` (package.json imports), not `../../config/…` (docs/architecture.md#layout).',
  ),
];

/** better-sqlite3 is loaded in one place, which picks the build for the running Node.js. */
const SQLITE_DRIVER = {
  name: 'better-sqlite3',
  message: 'Import { Database } from control-plane/src/storage/sqlite/driver.ts (docs/platform.md#nodejs-versions).',
};
const NO_SERVER_LIBRARIES = ['fastify', 'ioredis', 'better-sqlite3', 'pino', 'undici'].map((name) => ({
  name,
  message: 'Protocol modules in lib/ take what they need as arguments; servers and storage stay outside.',
}));

/** The gateway parses a request's Cookie header once, in its request scope. */
const COOKIES_PARSED_ONCE = {
  name: '#lib/gateway-protocol/session-cookie.js',
  importNames: ['parseCookieHeader'],
  message: "Read a request's cookies through requestScope(req) (gateway/src/request-scope.ts), which parses them once.",
};

/**
 * One JWS library (docs/architecture.md#one-jws-library): every JWT Keyplane signs or checks goes
 * through lib/crypto/jwt.ts, on fast-jwt; jose stays for what is not a JWS (JWK import and export,
 * thumbprints, JWKS getters, the JWE cookie), and its sign and verify functions are refused here.
 */
const JOSE_JWS = [
  'SignJWT',
  'jwtVerify',
  'CompactSign',
  'compactVerify',
  'FlattenedSign',
  'flattenedVerify',
  'GeneralSign',
  'generalVerify',
  'EmbeddedJWK',
  'UnsecuredJWT',
];
const JWS_MESSAGE =
  'Sign and check JWTs through lib/crypto/jwt.ts (signJwt, verifyJwt, checkJwt, checkJws), the one JWS module (docs/architecture.md#one-jws-library).';
const ONE_JWS_LIBRARY = [
  { name: 'jose', importNames: JOSE_JWS, message: JWS_MESSAGE },
  { name: 'fast-jwt', message: JWS_MESSAGE },
];

const restricted = (patterns, paths = [SQLITE_DRIVER]) => ['error', { paths, patterns }];
/** The same, with the one JWS library kept: for lib/, the services and the CLI. */
const restrictedJws = (patterns, paths = [SQLITE_DRIVER]) => restricted(patterns, [...paths, ...ONE_JWS_LIBRARY]);

/** Operations take services and plain values; only the HTTP edge (routes, plugins, http/, the app) knows fastify. */
const NO_FASTIFY_IN_OPERATIONS = [
  ...['fastify', 'fastify-plugin'].map((name) => ({
    name,
    message:
      'Operations in control-plane/src/<area>/ never import fastify: request and reply stay in routes/, plugins/ and http/ (docs/architecture.md#layers).',
  })),
];
const NO_FASTIFY_PLUGINS_IN_OPERATIONS = [
  boundary(
    '^@fastify/',
    'Operations in control-plane/src/<area>/ never import fastify: request and reply stay in routes/, plugins/ and http/ (docs/architecture.md#layers).',
  ),
];

/**
 * The control plane's HTTP edge (docs/architecture.md#layers), defined once: the only folders that
 * import fastify, and that reach storage only through operations.
 */
const HTTP_EDGE = 'control-plane/src/{routes,plugins,http,pages}/**/*.ts';

/** Later entries win for a file that several match, so the narrower folder comes after the wider. */
export const boundaries = {
  'lib/**/*.ts': restrictedJws(NO_SERVICES_IN_LIB, NO_SERVER_LIBRARIES),
  // The one JWS module, on fast-jwt.
  'lib/crypto/jwt.ts': restricted(NO_SERVICES_IN_LIB, NO_SERVER_LIBRARIES),
  // The processes' runtime (shared state and rate limits over Redis, the log destination): the one part of
  // lib/ that may use server libraries (docs/architecture.md#decisions).
  'lib/runtime/**/*.ts': restrictedJws(NO_SERVICES_IN_LIB),
  'gateway/**/*.ts': restrictedJws([...NO_CONTROL_PLANE_IN_GATEWAY, ...SHARED_LAYERS_BY_NAME], [COOKIES_PARSED_ONCE]),
  'gateway/src/request-scope.ts': restrictedJws([...NO_CONTROL_PLANE_IN_GATEWAY, ...SHARED_LAYERS_BY_NAME], []),
  'control-plane/**/*.ts': restrictedJws(
    [...NO_GATEWAY_OR_CLI_IN_CONTROL_PLANE, ...NO_FASTIFY_PLUGINS_IN_OPERATIONS, ...SHARED_LAYERS_BY_NAME],
    [SQLITE_DRIVER, ...NO_FASTIFY_IN_OPERATIONS],
  ),
  // The HTTP edge of the control plane: where fastify belongs. Pages render for routes and read
  // the request's language and nonce (docs/i18n.md), so they are part of it.
  [HTTP_EDGE]: restrictedJws([...NO_GATEWAY_OR_CLI_IN_CONTROL_PLANE, ...SHARED_LAYERS_BY_NAME]),
  'control-plane/src/{app,server,logging}.ts': restrictedJws([
    ...NO_GATEWAY_OR_CLI_IN_CONTROL_PLANE,
    ...SHARED_LAYERS_BY_NAME,
  ]),
  'control-plane/src/storage/sqlite/driver.ts': restrictedJws(
    [...NO_GATEWAY_OR_CLI_IN_CONTROL_PLANE, ...SHARED_LAYERS_BY_NAME],
    [],
  ),
  'cli/**/*.ts': restrictedJws([...NO_STORAGE_FROM_CLI, ...SHARED_LAYERS_BY_NAME]),
  // The demo app stands in for a third party's app behind the gateway: it checks the gateway's
  // assertion and the ID token as any relying party would, with jose, an implementation of its own.
  'cli/src/demo/**/*.ts': restricted(
    [...NO_STORAGE_FROM_CLI, ...SHARED_LAYERS_BY_NAME],
    [SQLITE_DRIVER, ONE_JWS_LIBRARY[1]],
  ),
  'test/**/*.ts': restricted(SHARED_LAYERS_BY_NAME),
  'test/control-plane/**/*.ts': restricted([...NO_CLI_IN_CONTROL_PLANE_TESTS, ...SHARED_LAYERS_BY_NAME]),
  'bench/**/*.ts': restricted(SHARED_LAYERS_BY_NAME),
  'sdk/**/*.ts': restricted(NO_SERVER_CODE_IN_SDK),
  'config/**/*.ts': restricted(SHARED_LAYERS_BY_NAME),
};

/**
 * Routes parse, call one operation and shape the answer (docs/architecture.md#layers): storage is
 * reached only from operations in `control-plane/src/<area>/`, never from `routes/`.
 */
const NO_STORAGE_IN_ROUTES = [
  'error',
  ...[
    "MemberExpression[property.name='storage']",
    "VariableDeclarator > ObjectPattern > Property[key.name='storage']",
    "MemberExpression[object.name='tx']",
  ].map((selector) => ({
    selector,
    message:
      'Routes call operations that take services; storage and transactions belong in control-plane/src/<area>/ (docs/architecture.md#layers).',
  })),
];

/**
 * Files allowed to break a boundary for now, each named with the rule it breaks; empty since the
 * CLI opens storage through the control plane's services. Add an entry only with a plan to remove it.
 */
const KNOWN_VIOLATIONS = {};

/** The names taken from `const { a, b: c } = await import('…')`, or none. */
function destructuredNames(node) {
  const awaited = node.parent?.type === 'AwaitExpression' ? node.parent : null;
  const declarator = awaited?.parent?.type === 'VariableDeclarator' ? awaited.parent : null;
  if (declarator?.id.type !== 'ObjectPattern') return [];
  return declarator.id.properties
    .filter((property) => property.type === 'Property' && !property.computed && property.key.type === 'Identifier')
    .map((property) => property.key.name);
}

/**
 * `no-restricted-imports` sees only static imports; this rule applies the same `paths` and
 * `patterns` to `import('…')` with a literal specifier, which the CLI and lazy loaders use.
 */
const noRestrictedDynamicImports = {
  meta: { type: 'problem', schema: false },
  create(context) {
    const [{ paths = [], patterns = [] } = {}] = context.options;
    return {
      ImportExpression(node) {
        const { source } = node;
        const specifier =
          source.type === 'Literal' && typeof source.value === 'string'
            ? source.value
            : source.type === 'TemplateLiteral' && source.expressions.length === 0
              ? source.quasis[0].value.cooked
              : null;
        if (specifier === null) return;
        // A path that names imports refuses only those: taken by name from the awaited module
        // (`const { a } = await import('…')`); an import() of the whole module does not single them out.
        const taken = destructuredNames(node);
        const found =
          paths.find(
            (path) =>
              path.name === specifier && (!path.importNames || path.importNames.some((name) => taken.includes(name))),
          ) ?? patterns.find((pattern) => new RegExp(pattern.regex).test(specifier));
        if (found) context.report({ node, message: found.message });
      },
    };
  },
};
/**
 * One error path (docs/errors.md#one-error-path): code throws a `KeyplaneError`, and only the control
 * plane's errors plugin and the gateway's respond.ts turn it into the `{ok: false, reason}`
 * envelope (or a page); a limit is refused only through lib/errors/rate-limited.ts, which sets
 * `Retry-After`.
 */
const ENVELOPE_MESSAGE =
  'Throw a KeyplaneError (fail(…)) instead of writing the envelope: only control-plane/src/plugins/errors.ts and gateway/src/respond.ts write it (docs/errors.md#one-error-path).';
const RATE_LIMITED_MESSAGE =
  'Refuse over a limit with rateLimited() or enforceLimit() from lib/errors/rate-limited.ts, which sets Retry-After (docs/errors.md#one-error-path).';
const oneErrorPath = {
  meta: {
    type: 'problem',
    schema: [{ type: 'object', properties: { envelope: { type: 'boolean' } }, additionalProperties: false }],
  },
  create(context) {
    const [{ envelope: checkEnvelope = true } = {}] = context.options;
    const keyOf = (property) =>
      property.type !== 'Property' || property.computed
        ? null
        : property.key.type === 'Identifier'
          ? property.key.name
          : property.key.value;
    return {
      ObjectExpression(node) {
        if (!checkEnvelope) return;
        const ok = node.properties.find((property) => keyOf(property) === 'ok');
        const envelope =
          ok?.value.type === 'Literal' &&
          ok.value.value === false &&
          node.properties.some((property) => keyOf(property) === 'reason');
        if (envelope) context.report({ node, message: ENVELOPE_MESSAGE });
      },
      'CallExpression, NewExpression'(node) {
        const { callee } = node;
        const name =
          callee.type === 'Identifier'
            ? callee.name
            : callee.type === 'MemberExpression' && callee.property.type === 'Identifier'
              ? callee.property.name
              : null;
        const [first] = node.arguments;
        if (
          (name === 'fail' || name === 'KeyplaneError') &&
          first?.type === 'Literal' &&
          first.value === 'rate_limited'
        )
          context.report({ node, message: RATE_LIMITED_MESSAGE });
      },
    };
  },
};

/**
 * Only a fastify plugin takes the fastify app (docs/architecture.md#layers): everything else the
 * control plane exports takes services, a request or a reply. An exported function (declared, or a
 * const holding one) with a parameter typed `FastifyInstance` is refused outside routes/ and plugins/.
 */
const APP_PARAMETER_MESSAGE =
  'Only routes/ and plugins/ take the fastify app: take services (Pick<ControlPlaneServices, …>), the request or the reply instead, or make this a plugin (docs/architecture.md#layers).';
const noAppParameter = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const takesApp = (fn) =>
      fn.params.some((param) => {
        const node = param.type === 'AssignmentPattern' ? param.left : param;
        const type = node.typeAnnotation?.typeAnnotation;
        return (
          type?.type === 'TSTypeReference' &&
          type.typeName.type === 'Identifier' &&
          type.typeName.name === 'FastifyInstance'
        );
      });
    const check = (fn) => {
      if (fn && /Function/.test(fn.type) && takesApp(fn)) context.report({ node: fn, message: APP_PARAMETER_MESSAGE });
    };
    return {
      ExportNamedDeclaration(node) {
        const { declaration } = node;
        if (!declaration) return;
        if (declaration.type === 'FunctionDeclaration') check(declaration);
        if (declaration.type === 'VariableDeclaration') for (const d of declaration.declarations) check(d.init);
      },
      ExportDefaultDeclaration(node) {
        check(node.declaration);
      },
    };
  },
};

/**
 * One admin-token guard (lib/http/admin-token.ts): the configured token is read only as an argument
 * of `presentsAdminToken` or `requireAdminToken`, which parse the header, compare in constant time
 * and refuse the same way everywhere.
 */
const ADMIN_TOKEN_GUARDS = new Set(['presentsAdminToken', 'requireAdminToken']);
const oneAdminTokenGuard = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const message =
      'Check the admin token through presentsAdminToken or requireAdminToken (lib/http/admin-token.ts), the one guard.';
    return {
      'VariableDeclarator > ObjectPattern > Property[key.name="adminToken"]'(node) {
        context.report({ node, message });
      },
      'MemberExpression[computed=false][property.name="adminToken"]'(node) {
        const { parent } = node;
        const callee = parent.type === 'CallExpression' && parent.arguments.includes(node) ? parent.callee : null;
        if (callee?.type === 'Identifier' && ADMIN_TOKEN_GUARDS.has(callee.name)) return;
        context.report({ node, message });
      },
    };
  },
};

/**
 * One referrer policy (plugins/security-headers.ts): a route that needs `same-origin` says so with
 * `config.sameOriginReferrer`, and the page's meta tag follows it (pages/layout.ts); nothing else sets
 * the header or rewrites the tag.
 */
const REFERRER_MESSAGE =
  'Set `config.sameOriginReferrer` on the route (or sameOriginReferrerArea on its area) instead: plugins/security-headers.ts sends the header and pages/layout.ts the meta tag (docs/architecture.md#hooks-only-where-they-are-needed).';
const oneReferrerPolicy = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const text = (node) =>
      node?.type === 'Literal' && typeof node.value === 'string'
        ? node.value
        : node?.type === 'TemplateLiteral'
          ? node.quasis.map((q) => q.value.cooked).join('')
          : null;
    return {
      CallExpression(node) {
        const { callee } = node;
        const name = callee.type === 'MemberExpression' && !callee.computed ? callee.property.name : null;
        if ((name === 'header' || name === 'setHeader') && /^referrer-policy$/i.test(text(node.arguments[0]) ?? ''))
          context.report({ node, message: REFERRER_MESSAGE });
      },
      'Literal, TemplateLiteral'(node) {
        if (/name="referrer"/.test(text(node) ?? '')) context.report({ node, message: REFERRER_MESSAGE });
      },
    };
  },
};

const localRules = {
  plugins: {
    keyplane: {
      rules: {
        'no-restricted-dynamic-imports': noRestrictedDynamicImports,
        'one-error-path': oneErrorPath,
        'no-app-parameter': noAppParameter,
        'one-admin-token-guard': oneAdminTokenGuard,
        'one-referrer-policy': oneReferrerPolicy,
      },
    },
  },
};

const byFile = (table) =>
  Object.entries(table).map(([file, rule]) => ({
    files: [file],
    rules: { 'no-restricted-imports': rule, 'keyplane/no-restricted-dynamic-imports': rule },
  }));

export default tseslint.config(
  { ignores: ['dist/**', '**/dist/**', 'node_modules/**', 'coverage/**', '.tap/**', 'data/**', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      // Files past 400 lines are due for a split by concern (docs/platform.md#lint).
      'max-lines': ['warn', { max: 400, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Input checks match control characters on purpose, to refuse them (return URLs, paths, emails).
      'no-control-regex': 'off',
    },
  },
  {
    // Tests read untyped JSON from real peers (browsers, openid-client, manifests); source code may not.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { process: 'readonly', console: 'readonly', setImmediate: 'readonly', URL: 'readonly' },
    },
  },
  {
    // Example pages served to browsers as they are (no build step): browser globals, top-level await.
    files: ['deploy/examples/**/*.js'],
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'navigator',
          'fetch',
          'crypto',
          'TextEncoder',
          'URL',
          'URLSearchParams',
          'btoa',
          'PublicKeyCredential',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
  localRules,
  ...byFile(boundaries),
  ...byFile(KNOWN_VIOLATIONS),
  {
    // The services answer HTTP through one writer each; lib/ and the CLI's own results may say ok: false.
    files: ['control-plane/src/**/*.ts', 'gateway/src/**/*.ts', 'lib/**/*.ts'],
    ignores: [
      'control-plane/src/plugins/errors.ts',
      'gateway/src/respond.ts',
      'lib/errors/keyplane-error.ts',
      'lib/errors/rate-limited.ts',
    ],
    rules: { 'keyplane/one-error-path': ['error', { envelope: true }] },
  },
  {
    files: ['lib/**/*.ts'],
    ignores: ['lib/errors/rate-limited.ts'],
    rules: { 'keyplane/one-error-path': ['error', { envelope: false }] },
  },
  // plugins/, http/ and pages/ reach storage only through operations, as routes do.
  {
    files: [HTTP_EDGE],
    rules: { 'no-restricted-syntax': NO_STORAGE_IN_ROUTES },
  },
  {
    files: ['control-plane/src/**/*.ts'],
    ignores: ['control-plane/src/{routes,plugins}/**/*.ts'],
    rules: { 'keyplane/no-app-parameter': 'error' },
  },
  {
    files: ['control-plane/src/**/*.ts', 'gateway/src/**/*.ts', 'lib/**/*.ts'],
    rules: { 'keyplane/one-admin-token-guard': 'error' },
  },
  {
    files: ['control-plane/src/**/*.ts'],
    ignores: ['control-plane/src/plugins/security-headers.ts', 'control-plane/src/pages/layout.ts'],
    rules: { 'keyplane/one-referrer-policy': 'error' },
  },
);
