import { randomBytes, createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { readAdminToken } from '#config/env.js';
import { CliError, EXIT } from '../exit.js';
import { baseUrl } from '../admin-api.js';
import { progress, say } from '../io.js';

/**
 * `keyplane rollout …` (docs/rollout.md): the operator's side of classify → register → verify →
 * canary → attest, over the control plane's admin API. Every step can run again safely; each
 * prints what it did and the next step. Exit 0 done, 1 a check failed or the server refused,
 * 2 usage or network.
 */

const TIMEOUT_MS = 15_000;
const POLL_MS = 1_000;

interface Options {
  controlPlane?: string;
  json?: boolean;
  project?: string;
  environment?: string[];
  redirectUri?: string[];
  profile?: string;
  percent?: string;
  revision?: string;
  wait?: string;
  out?: string;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The server refused: exit 1 with its reason (and, with --json, its envelope on stdout). */
class Refused extends CliError {
  constructor(
    readonly answer: Answer,
    what: string,
  ) {
    super(
      `${what}: ${String(answer.body['reason'] ?? `HTTP ${answer.status}`)}${answer.body['message'] ? ` (${String(answer.body['message'])})` : ''}`,
      EXIT.failed,
    );
  }
}

/** A check failed: the report is printed, then exit 1. */
class CheckFailed extends CliError {
  constructor(
    message: string,
    readonly report: Json,
  ) {
    super(message, EXIT.failed);
  }
}

interface Context {
  base: string;
  token: string;
  options: Options;
}

function contextOf(options: Options): Context {
  const base = baseUrl(options.controlPlane);
  const token = readAdminToken();
  if (!token) throw new CliError("set KEYPLANE_ADMIN_TOKEN to the control plane's admin (operator) token", EXIT.usage);
  return { base, token, options };
}

function requireProject(options: Options): string {
  const project = options.project;
  if (!project || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(project))
    throw new CliError('--project NAME is required (lower-case letters, digits and dashes)', EXIT.usage);
  return project;
}

function integer(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < min || n > max)
    throw new CliError(`${name} must be an integer from ${min} to ${max}`, EXIT.usage);
  return n;
}

async function call(ctx: Context, method: 'GET' | 'POST', path: string, body?: unknown, auth = true): Promise<Answer> {
  const url = path.startsWith('http') ? path : `${ctx.base}${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      signal: AbortSignal.timeout(TIMEOUT_MS),
      redirect: 'manual',
      headers: {
        accept: 'application/json',
        ...(auth ? { authorization: `Bearer ${ctx.token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (error) {
    throw new CliError(`cannot reach ${url}: ${(error as Error).message}`, EXIT.usage);
  }
  let parsed: unknown;
  try {
    parsed = await response.json();
  } catch {
    throw new CliError(`${url} answered ${response.status} without JSON`, EXIT.usage);
  }
  if (!parsed || typeof parsed !== 'object')
    throw new CliError(`${url} answered ${response.status} with something other than a JSON object`, EXIT.usage);
  return { status: response.status, body: parsed as Record<string, unknown> };
}

async function ok(ctx: Context, method: 'GET' | 'POST', path: string, what: string, body?: unknown): Promise<Json> {
  const answer = await call(ctx, method, path, body);
  if (answer.body['ok'] !== true) throw new Refused(answer, what);
  return answer.body as Json;
}

function command(ctx: Context, step: string, project?: string): string {
  return `keyplane rollout ${step}${project ? ` --project ${project}` : ''} --control-plane ${ctx.base}`;
}

/** Prints the outcome: the lines for people, or one JSON object with --json. */
function finish(ctx: Context, lines: string[], result: Json, next: string | null): void {
  if (ctx.options.json) {
    say(JSON.stringify({ ok: true, ...result, next }));
    return;
  }
  for (const line of lines) say(line);
  if (next) say(`next: ${next}`);
}

const receiptOf = (body: Json) =>
  typeof body['receipt'] === 'string' ? ` (receipt ${String(body['receipt']).slice(0, 16)}…)` : '';

async function classify(ctx: Context, file: string): Promise<void> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      EXIT.usage,
    );
  }
  progress(`validating and signing ${file} at ${ctx.base}`);
  const body = await ok(ctx, 'POST', '/rollout/documents', `cannot classify ${file}`, { document: text });
  if (ctx.options.out) writeFileSync(ctx.options.out, `${String(body['jws'])}\n`);
  const what = body['kind'] === 'plan' ? 'migration plan' : 'trust profile';
  const hash = String(body['hash']).slice(0, 16);
  const lines = [
    body['created']
      ? `signed ${what} ${body['project']} version ${body['version']} (sha-256 ${hash}…)${receiptOf(body)}`
      : `unchanged: ${what} ${body['project']} version ${body['version']} already says this (sha-256 ${hash}…)`,
    ...(ctx.options.out ? [`wrote the signed ${what} (compact JWS) to ${ctx.options.out}`] : []),
  ];
  const next = body['kind'] === 'plan' ? command(ctx, 'status') : command(ctx, 'register', String(body['project']));
  finish(
    ctx,
    lines,
    {
      step: 'classify',
      kind: body['kind'],
      project: body['project'],
      version: body['version'],
      created: body['created'],
      hash: body['hash'],
    },
    next,
  );
}

async function register(ctx: Context): Promise<void> {
  const project = requireProject(ctx.options);
  let signed: string | undefined;
  if (ctx.options.profile) {
    try {
      signed = readFileSync(ctx.options.profile, 'utf8').trim();
    } catch (error) {
      throw new CliError(
        `cannot read ${ctx.options.profile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        EXIT.usage,
      );
    }
  }
  progress(`registering the client of ${project} from its newest signed profile`);
  const body = await ok(ctx, 'POST', `/rollout/projects/${project}/register`, `cannot register ${project}`, {
    ...(signed ? { profile: signed } : {}),
    ...(ctx.options.environment?.length ? { environments: ctx.options.environment } : {}),
    ...(ctx.options.redirectUri?.length ? { redirect_uris: ctx.options.redirectUri } : {}),
  });
  const client = body['client'] as Json;
  const gateway = client['gateway'] as Json | undefined;
  const lines = body['created']
    ? [
        `registered client ${client['client_id']} for ${project} (revision ${client['revision']})${receiptOf(body)}`,
        `  redirect URIs: ${(client['redirect_uris'] as string[]).join(', ')}`,
        `  client secret (shown once): ${client['client_secret']}`,
        `  registration access token (shown once): ${client['registration_access_token']}`,
        ...(gateway ? [`  gateway policy: ${gateway['mode']} (nothing is refused until canary and attest)`] : []),
      ]
    : [
        `unchanged: ${project} is registered already as client ${client['client_id']} (revision ${client['revision']}); no secret is shown again`,
      ];
  const start = gateway
    ? `start the gateway (KEYPLANE_GATEWAY_CLIENT_SECRET=<the secret> keyplane gateway --client-id ${client['client_id']} --control-plane ${ctx.base} --public-url <its URL>), then `
    : '';
  finish(
    ctx,
    lines,
    { step: 'register', project, created: body['created'], client },
    `${start}${command(ctx, 'verify', project)}`,
  );
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

function pkceChallenge(): { challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** One authorization request without a session: what the control plane answers a browser. */
async function probeAuthorize(
  endpoint: string,
  params: Record<string, string>,
): Promise<{ status: number; location: string | null }> {
  const url = new URL(endpoint);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  try {
    const response = await fetch(url, {
      redirect: 'manual',
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: { accept: 'text/html' },
    });
    await response.arrayBuffer();
    return { status: response.status, location: response.headers.get('location') };
  } catch (error) {
    throw new CliError(`cannot reach ${url.origin}: ${(error as Error).message}`, EXIT.usage);
  }
}

const refusedWith = (probe: { status: number; location: string | null }, redirectUri: string) =>
  probe.status >= 400 ||
  (probe.location !== null && probe.location.startsWith(redirectUri) && /[?&]error=/.test(probe.location));

/** The checks made from here, against the live control plane, as any relying party sees it. */
async function liveChecks(ctx: Context, slice: Json): Promise<Check[]> {
  const checks: Check[] = [];
  progress('checking discovery');
  const discovery = await call(ctx, 'GET', '/.well-known/openid-configuration', undefined, false);
  const doc = discovery.body as Json;
  const methods = (doc['code_challenge_methods_supported'] as string[] | undefined) ?? [];
  const discoveryOk =
    discovery.status === 200 &&
    doc['issuer'] === ctx.base &&
    typeof doc['authorization_endpoint'] === 'string' &&
    methods.includes('S256');
  checks.push({
    name: 'discovery',
    ok: discoveryOk,
    detail: discoveryOk
      ? `issuer ${doc['issuer']}, S256 PKCE advertised`
      : `the discovery document must name issuer ${ctx.base} (it names ${String(doc['issuer'])}), an authorization_endpoint and S256 in code_challenge_methods_supported`,
  });
  if (!discoveryOk) return checks;
  const endpoint = String(doc['authorization_endpoint']);
  const registration = slice['registration'] as Json;
  const registered = new Set(registration['redirect_uris'] as string[]);
  const declared = [
    ...new Set(
      ((slice['profile'] as Json)['document']['environments'] as Json[]).flatMap(
        (environment) => environment['redirect_uris'] as string[],
      ),
    ),
  ];
  for (const uri of declared) {
    progress(`checking redirect URI ${uri}`);
    if (!registered.has(uri)) {
      checks.push({
        name: `redirect_uri:${uri}`,
        ok: false,
        detail: `${uri} is declared in the profile but not registered for the client`,
      });
      continue;
    }
    const probe = await probeAuthorize(endpoint, {
      response_type: 'code',
      client_id: String(registration['client_id']),
      redirect_uri: uri,
      scope: 'openid',
      state: randomBytes(16).toString('base64url'),
      nonce: randomBytes(16).toString('base64url'),
      code_challenge: pkceChallenge().challenge,
      code_challenge_method: 'S256',
    });
    const accepted = !refusedWith(probe, uri);
    checks.push({
      name: `redirect_uri:${uri}`,
      ok: accepted,
      detail: accepted
        ? `an authorization request with ${uri} and PKCE is accepted (HTTP ${probe.status})`
        : `the control plane refused ${uri} (HTTP ${probe.status}): it is not registered exactly`,
    });
  }
  const first = declared.find((uri) => registered.has(uri));
  if (first) {
    progress('checking that PKCE is enforced (an authorization request without code_challenge)');
    const probe = await probeAuthorize(endpoint, {
      response_type: 'code',
      client_id: String(registration['client_id']),
      redirect_uri: first,
      scope: 'openid',
      state: randomBytes(16).toString('base64url'),
      nonce: randomBytes(16).toString('base64url'),
    });
    const refused = refusedWith(probe, first);
    checks.push({
      name: 'pkce',
      ok: refused,
      detail: refused
        ? 'an authorization request without S256 PKCE is refused'
        : `an authorization request without PKCE was accepted (HTTP ${probe.status}): PKCE is not enforced`,
    });
  }
  return checks;
}

/** Polls the project until `done` holds or `waitMs` passes, with one progress line per second of waiting. */
async function waitFor(
  ctx: Context,
  project: string,
  what: string,
  done: (slice: Json) => boolean,
  waitMs: number,
): Promise<Json> {
  const started = Date.now();
  let slice = await ok(ctx, 'GET', `/rollout/projects/${project}`, `cannot read ${project}`);
  while (!done(slice) && Date.now() - started < waitMs) {
    progress(
      `waiting for ${what} (${Math.round((Date.now() - started) / 1000)} s, ${slice['status']}: ${slice['reason']})`,
    );
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    slice = await ok(ctx, 'GET', `/rollout/projects/${project}`, `cannot read ${project}`);
  }
  return slice;
}

const evidenceFresh = (slice: Json) =>
  slice['gateway_policy'] !== null &&
  slice['observed']['fresh_instances'] > 0 &&
  slice['observed']['config_hash'] === slice['declared']['config_hash'] &&
  ['observing', 'canary', 'enforcing_declared_config'].includes(String(slice['reason']));

function waitMs(options: Options): number {
  return (integer(options.wait, '--wait', 0, 600) ?? 30) * 1000;
}

async function verify(ctx: Context): Promise<void> {
  const project = requireProject(ctx.options);
  const wait = waitMs(ctx.options);
  const slice = await ok(ctx, 'GET', `/rollout/projects/${project}`, `cannot read ${project}`);
  if (!slice['registration'])
    throw new Refused(
      {
        status: 409,
        body: { reason: 'project_not_registered', message: `run ${command(ctx, 'register', project)} first` },
      },
      `cannot verify ${project}`,
    );
  const checks = await liveChecks(ctx, slice);
  if (slice['gateway_policy'] !== null)
    await waitFor(ctx, project, 'fresh gateway evidence of the declared config', evidenceFresh, wait);
  progress('recording the verification');
  const body = await ok(
    ctx,
    'POST',
    `/rollout/projects/${project}/verifications`,
    `cannot record the verification of ${project}`,
    { checks },
  );
  const all = body['checks'] as Check[];
  const lines = [
    `${body['passed'] ? 'verified' : 'verification FAILED for'} ${project}${receiptOf(body)}`,
    ...all.map((check) => `  ${check.ok ? 'ok  ' : 'FAIL'} ${check.name}: ${check.detail}`),
  ];
  const result = { step: 'verify', project, passed: body['passed'], checks: all };
  if (!body['passed']) {
    if (ctx.options.json)
      say(JSON.stringify({ ok: false, reason: 'check_failed', ...result, next: command(ctx, 'verify', project) }));
    else for (const line of lines) say(line);
    throw new CheckFailed(
      `${all.filter((check) => !check.ok).length} check(s) failed; fix them and run ${command(ctx, 'verify', project)} again`,
      result,
    );
  }
  finish(ctx, lines, result, `${command(ctx, 'canary', project)} --percent 10`);
}

function currentRevision(slice: Json): number {
  return Number((slice['registration'] as Json | null)?.['revision']);
}

async function canary(ctx: Context): Promise<void> {
  const project = requireProject(ctx.options);
  if (ctx.options.percent === undefined)
    throw new CliError('--percent N is required (an integer from 0 to 100)', EXIT.usage);
  const percent = integer(ctx.options.percent, '--percent', 0, 100)!;
  const slice = await ok(ctx, 'GET', `/rollout/projects/${project}`, `cannot read ${project}`);
  const revision = integer(ctx.options.revision, '--revision', 1, Number.MAX_SAFE_INTEGER) ?? currentRevision(slice);
  progress(`setting the gateway policy of ${project} to canary ${percent} % at registration revision ${revision}`);
  const body = await ok(ctx, 'POST', `/rollout/projects/${project}/canary`, `cannot start the canary of ${project}`, {
    percent,
    revision,
  });
  const after = await waitFor(
    ctx,
    project,
    'the gateways to report the canary config',
    evidenceFresh,
    waitMs(ctx.options),
  );
  const lines = [
    body['changed']
      ? `gateway policy of ${project}: canary ${percent} % (registration revision ${currentRevision(body['project'] as Json)})${receiptOf(body)}`
      : `unchanged: ${project} is at canary ${percent} % already`,
    `  evidence: ${after['observed']['fresh_instances']} fresh instance(s), status ${after['status']} (${after['reason']})`,
  ];
  finish(
    ctx,
    lines,
    { step: 'canary', project, percent, changed: body['changed'], status: after['status'], reason: after['reason'] },
    command(ctx, 'attest', project),
  );
}

async function attest(ctx: Context): Promise<void> {
  const project = requireProject(ctx.options);
  const revision = integer(ctx.options.revision, '--revision', 1, Number.MAX_SAFE_INTEGER);
  progress(`attesting ${project}: checking the verification and the gateway evidence`);
  const body = await ok(
    ctx,
    'POST',
    `/rollout/projects/${project}/attest`,
    `cannot attest ${project}`,
    revision !== undefined ? { revision } : {},
  );
  const after = await waitFor(
    ctx,
    project,
    'the gateways to enforce the attested config',
    (slice) => slice['status'] === 'enforced',
    waitMs(ctx.options),
  );
  const jws = String(body['attestation']);
  const lines = [
    body['changed']
      ? `attested ${project}: the gateway policy is now enforce${receiptOf(body)}`
      : `unchanged: ${project} is attested already`,
    `  attestation (rollout-attestation+jwt, sha-256 ${createHash('sha256').update(jws).digest('hex').slice(0, 16)}…)`,
    `  status: ${after['status']} (${after['reason']})`,
  ];
  finish(
    ctx,
    lines,
    {
      step: 'attest',
      project,
      changed: body['changed'],
      attestation: jws,
      status: after['status'],
      reason: after['reason'],
    },
    command(ctx, 'status'),
  );
}

function pad(cells: string[][]): string[] {
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
}

async function status(ctx: Context): Promise<void> {
  const body = await ok(ctx, 'GET', '/rollout?format=json', 'cannot read the rollout');
  const all = body['projects'] as Json[];
  const projects = all.filter((row) => !ctx.options.project || row['project'] === ctx.options.project);
  if (ctx.options.project && projects.length === 0) {
    const known = all.map((row) => String(row['project']));
    throw new Refused(
      {
        status: 404,
        body: {
          ok: false,
          reason: 'not_found',
          message: `no project named ${ctx.options.project}${known.length > 0 ? `; the projects are ${known.join(', ')}` : '; no project has a trust profile yet'}`,
        },
      },
      'rollout status',
    );
  }
  if (ctx.options.json) {
    say(JSON.stringify({ ok: true, step: 'status', projects }));
    return;
  }
  if (projects.length === 0) {
    say('no project has a trust profile yet');
    say(`next: ${command(ctx, 'classify')} FILE`);
    return;
  }
  const rows = projects.map((row) => {
    const declared = row['declared'];
    const observed = row['observed'];
    const mode =
      declared['mode'] === null
        ? 'none'
        : declared['mode'] === 'canary'
          ? `canary ${declared['canary_percent']}%`
          : declared['mode'];
    return [
      row['project'],
      row['stage'],
      `v${declared['profile_version']} ${declared['required_assurance']}`,
      mode,
      observed['age_seconds'] === null
        ? 'none'
        : `${observed['fresh_instances']}/${observed['instances']} fresh, ${observed['age_seconds']} s`,
      row['status'],
      row['reason'],
    ].map(String);
  });
  for (const line of pad([
    ['PROJECT', 'STAGE', 'PROFILE', 'POLICY (declared)', 'EVIDENCE (observed)', 'STATUS', 'WHY'],
    ...rows,
  ]))
    say(line);
}

export function rolloutCommands(program: Command): void {
  const rollout = program
    .command('rollout')
    .description(
      'The rollout flow against a running control plane (operator token from KEYPLANE_ADMIN_TOKEN): classify, register, verify, canary, attest, status. Exit 0 done, 1 a check failed or refused, 2 usage or network error.',
    );
  const common = (sub: Command) =>
    sub
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object');
  const project = (sub: Command) => common(sub).option('--project <name>', 'the project named in its trust profile');
  const run =
    (step: (ctx: Context, ...rest: string[]) => Promise<void>) =>
    async (...args: unknown[]) => {
      const options = args.find(
        (arg) => arg && typeof arg === 'object' && !Array.isArray(arg) && !('commands' in (arg as object)),
      ) as Options;
      const positional = args.filter((arg) => typeof arg === 'string') as string[];
      try {
        await step(contextOf(options), ...positional);
      } catch (error) {
        if (error instanceof Refused && options.json) say(JSON.stringify(error.answer.body));
        throw error;
      }
    };
  const collect = (value: string, previous: string[] = []) => [...previous, value];

  common(
    rollout
      .command('classify')
      .description(
        "Validate a trust profile or migration plan (YAML or JSON) and have the control plane sign it as the project's next version.",
      ),
  )
    .argument('<file>', 'project-trust-profile/v1 or migration-plan/v1 document')
    .option('--out <file>', 'also write the signed document (compact JWS) here')
    .action(run(classify));
  project(
    rollout
      .command('register')
      .description("Register the project's OIDC client from its newest signed profile; prints the client secret once."),
  )
    .option('--profile <file>', 'the signed profile (compact JWS from classify --out) to register against')
    .option('--environment <name>', 'register only this environment (repeatable)', collect)
    .option('--redirect-uri <uri>', 'register only this redirect URI (repeatable; must be in the profile)', collect)
    .action(run(register));
  project(
    rollout
      .command('verify')
      .description(
        'Check the live system: discovery, each redirect URI, PKCE enforcement, and fresh gateway evidence of the declared policy.',
      ),
  )
    .option('--wait <seconds>', 'how long to wait for fresh gateway evidence (default 30)')
    .action(run(verify));
  project(
    rollout
      .command('canary')
      .description('Enforce the gateway policy for N % of sessions, through the registration revision.'),
  )
    .option('--percent <n>', 'share of sessions, 0 to 100')
    .option('--revision <n>', 'the registration revision this change is based on (default: the current one)')
    .option('--wait <seconds>', 'how long to wait for the gateways to report the new config (default 30)')
    .action(run(canary));
  project(
    rollout
      .command('attest')
      .description(
        'After a passing verify and with fresh evidence: switch the policy to enforce and sign an attestation.',
      ),
  )
    .option('--revision <n>', 'the registration revision this change is based on (default: the current one)')
    .option('--wait <seconds>', 'how long to wait for the gateways to enforce (default 30)')
    .action(run(attest));
  common(
    rollout
      .command('status')
      .description(
        'The rollout truth as a table: declared next to observed, enforced only with fresh matching evidence.',
      ),
  )
    .option('--project <name>', 'only this project')
    .action(run(status));
}
