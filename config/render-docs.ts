import { REASONS } from '#lib/errors/reasons.js';
import { leaves } from './load.js';
import { schemas, type ConfigKind } from './schema.js';

const TITLES: Record<ConfigKind, string> = {
  'control-plane': 'Control plane (`keyplane control-plane`, `keyplane up`)',
  gateway: 'Gateway (`keyplane gateway`)',
};

function cell(value: unknown): string {
  if (value === undefined) return '—';
  return '`' + JSON.stringify(value) + '`';
}

/** docs/configuration.md, generated from the schema so the two cannot drift. */
export function renderConfigurationDoc(): string {
  const parts = [
    '# Configuration',
    '',
    '<!-- Generated from config/schema.ts by `npm run docs`; a test fails when this file and the schema differ. -->',
    '',
    'Each service reads, in order: the defaults below, then a YAML file (`--config FILE` or `KEYPLANE_CONFIG`), then environment variables, then command-line flags; later sources win. The result is validated against one JSON schema (unknown keys are errors) and every problem is reported at once, with its key path, before the process refuses to start (exit code 2). Nested keys are written with dots here and nested in YAML (`http.bodyLimit` is `http: { bodyLimit: … }`). Examples: `config/control-plane.example.yaml`, `config/gateway.example.yaml`.',
    '',
    'Keys marked secret are never logged; prefer the environment variable for them.',
  ];
  for (const kind of Object.keys(schemas) as ConfigKind[]) {
    parts.push(
      '',
      `## ${TITLES[kind]}`,
      '',
      '| key | type | default | env | flag | description |',
      '|---|---|---|---|---|---|',
    );
    for (const [path, leaf] of leaves(schemas[kind])) {
      const type = leaf.type === 'array' ? 'list of strings' : String(leaf.type);
      const description = String(leaf['description'] ?? '') + (leaf['secret'] ? ' **Secret.**' : '');
      parts.push(
        `| \`${path}\` | ${type} | ${cell(leaf.default)} | ${leaf.env ? '`' + leaf.env + '`' : '—'} | ${leaf.flag ? '`' + leaf.flag + '`' : '—'} | ${description.replace(/\|/g, '\\|')} |`,
      );
    }
  }
  return parts.join('\n') + '\n';
}

/** docs/errors.md, generated from lib/errors/reasons.ts. */
export function renderErrorsDoc(): string {
  const rows = Object.entries(REASONS).map(
    ([reason, { status, description }]) => `| \`${reason}\` | ${status} | ${description.replace(/\|/g, '\\|')} |`,
  );
  return [
    '# Errors',
    '',
    '<!-- Generated from lib/errors/reasons.ts by `npm run docs`; a test fails when they differ. -->',
    '',
    'Every failure, on every route of both services, is a JSON envelope with an HTTP status that mirrors it (a browser on a page of the control plane reads the same failure on a page: [one error path](#one-error-path)):',
    '',
    '```json',
    '{ "ok": false, "reason": "rate_limited", "message": "too many attempts; try again in 42 s" }',
    '```',
    '',
    '`reason` is stable and meant for code; `message` is for people and may change. OAuth endpoints (`/auth/token`, `/auth/revoke`, `/register`) add the RFC 6749 / RFC 7591 fields `error` and `error_description` beside it, so standard clients understand them. No failure carries a stack trace or internal detail; a `500 internal` is logged with the request id that the response carries in `x-request-id`.',
    '',
    '| reason | status | meaning |',
    '|---|---|---|',
    ...rows,
    '',
    '## OAuth endpoints',
    '',
    'The token, revocation and introspection endpoints mark their routes (`config.oauthErrors`), and the one error handler adds `error` and `error_description` (RFC 6749 §5.2) to every failure there that did not set them: `rate_limited` becomes `slow_down`, `unavailable` `temporarily_unavailable`, another 5xx `server_error`, anything else `invalid_request`. Code that knows the precise OAuth code raises it with `oauthError(reason, message, { error })` from lib/oauth/errors.ts.',
    '',
    '## One error path',
    '',
    "Code throws a `KeyplaneError` (`fail(reason, message)`) and writes no envelope itself. The control plane's one error handler (control-plane/src/plugins/errors.ts) answers every failure; the gateway's respond.ts (`sendEnvelope`, and `sendError`, which also counts the refusal) writes its envelope for responses, refused WebSocket upgrades and failed upstreams alike.",
    '',
    'A route that a person reaches in the browser says so with `config.errorPage`. A refusal of a request that does not ask for JSON (a GET without `format=json` or an Accept preferring JSON, or a form post) is then a page with the same status and headers (`Retry-After` included): `true` for the shared refusal page (in the page\'s language, the reason in `<code data-reason>`), or the route\'s own renderer, which shows the form again with the person\'s input and the reason (magic-link request, recovery sign-in, the connector and SAML provider forms) or says what to do next (mailed links, SAML). If a route\'s renderer fails, the shared page is shown (the public scan page shows its form again around a refused URL this way, with the refusal\'s status). Scripts and API callers, which ask for JSON or send it, get the envelope; the OAuth endpoints keep their standard bodies. A protocol that adds members to its failures says so by route config, and the error handler adds them: `oauthErrors` (RFC 6749 §5.2 `error`/`error_description`) and `errorMembers` (FedCM\'s `{"error": {"code", "error"}}`); no hook re-reads an answer to change it.',
    '',
    "The authorization endpoint is an operation (control-plane/src/oidc/authorize/) whose steps throw: a refusal the client may hear is a `KeyplaneError` made by `refuseToClient(error, description)`, which marks it `toClient`. The operation answers every refusal in one place (`answeringRefusals` in authorize.ts): before the redirect URI is verified everything is thrown on to the error handler and shown on a page, never redirected; once a registered redirect URI is known, a `toClient` refusal (and a dependency outage, as `temporarily_unavailable`) goes to it with `state` and RFC 9207 `iss` by the request's response mode, and any other failure (an expired approval) is still a page.",
    '',
    "Every route in the page context (the `pages(...)` areas of app.ts) has it without anyone remembering: plugins/page-context.ts gives each route that sets no `errorPage` the default `'browser'`, the shared refusal page (in the words of a refused page, `page_refused.*`; `true` keeps those of a refused sign-in request for the OAuth and OIDC front channel: authorize, logout, device approval) for a request that does not ask for JSON **and names `text/html` in Accept** (a browser's navigation, a plain `<form>` post), so the account, org, rollout and other pages and the routes their forms post to answer a browser with a page. The extra `text/html` condition is what keeps API callers where they were: curl, SDKs and `fetch()` send `*/*` or `application/json` and get the envelope byte for byte, on JSON-only routes such as `/account/export` or `/projects/:client_id/profile` too; the pages' own scripts (common.js, forms.js) ask for JSON. A route marks `errorPage: true` or its own renderer where a page is wanted for any non-JSON request (the sign-in, authorize and SAML routes), or `errorPage: false` to opt out; the `/device` entry page and its form show the form again with the typed code and the reason. test/control-plane/http/error-pages.test.ts keeps this so: with the session store down, every GET route of the page context answers a browser with a page and an API caller with the envelope.",
    '',
    'A limit refuses only through lib/errors/rate-limited.ts: `enforceLimit(decision, message)` with a `RateLimiter` decision, or `rateLimited(retryAfterMs, message)`, both 429 `rate_limited` with `Retry-After` in whole seconds (at least 1). The lint rule `keyplane/one-error-path` (eslint.config.js) refuses an `{ok: false, reason}` literal outside the two writers and `rate_limited` raised anywhere else.',
    '',
    '## Dependency outages',
    '',
    "When PostgreSQL or Redis (or, at the gateway, the control plane) cannot be reached or cannot serve now (connection refused or reset, no answer within the configured budget, a failover in progress: a read-only standby, a Redis replica, a cluster slot moving), the request answers 503 `unavailable` with `Retry-After: 5` and a message naming the part (`the database (PostgreSQL) is unavailable; retry shortly`), never 500 `internal`. One pure classifier (lib/errors/dependency-outage.ts) reads the drivers' errors (pg, ioredis, undici, jose); the boundary that made the call throws a `DependencyUnavailableError` naming the dependency, and each service maps it in its one error handler. Standard protocol endpoints keep their standard shapes: the token, revocation and introspection endpoints (those marked `oauthErrors`, below) add `error: temporarily_unavailable` beside the envelope (RFC 6749 §5.2 defines no 5xx code; `temporarily_unavailable` is the registered one for this, §4.1.2.1 and §11.4), the authorization endpoint sends `error=temporarily_unavailable` to the redirect URI once it has verified it (RFC 6749 §4.1.2.1: a 503 cannot travel through a redirect) and answers the 503 itself before, and FedCM answers `temporarily_unavailable`. `/readyz` answers 503 `not_ready` meanwhile. What holds across outages and failovers: [scaling.md](scaling.md#when-a-dependency-goes-away).",
    '',
    '## Protocol errors',
    '',
    'The pure modules in lib/ (DPoP proofs, signed gateway configs and evidence, ledger checkpoints) throw a `ProtocolError` (lib/errors/protocol-error.ts) with a `code` from one closed union. Callers tell them apart with `isProtocolError(error, code)`, never by class or message, and turn them into a `KeyplaneError` with a reason from the table above.',
    '',
  ].join('\n');
}
