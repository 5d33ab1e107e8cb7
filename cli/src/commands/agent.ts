import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { JWK } from 'jose';
import { readAdminToken, readClientSecret } from '#config/env.js';
import { signRunProof, type RunProof } from '#lib/agents/run-proof.js';
import { signJwt, type JwtAlgorithm } from '#lib/crypto/jwt.js';
import { CliError, EXIT } from '../exit.js';
import { baseUrl } from '../admin-api.js';
import { progress, say } from '../io.js';

const TIMEOUT_MS = 10_000;
const HEX64 = /^[0-9a-f]{64}$/;

interface Common {
  controlPlane?: string;
  key?: string;
  json?: boolean;
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** The server refused: the envelope goes to stdout with --json, the exit code is 1. */
class Refused extends CliError {
  constructor(
    readonly answer: Answer,
    what: string,
  ) {
    const reason = answer.body['reason'] ?? answer.body['error'] ?? `HTTP ${answer.status}`;
    const message = answer.body['message'] ?? answer.body['error_description'];
    super(`${what}: ${String(reason)}${message ? ` (${String(message)})` : ''}`, EXIT.failed);
  }
}

async function call(
  url: string,
  init: {
    method?: 'GET' | 'POST';
    json?: unknown;
    form?: Record<string, string>;
    headers?: Record<string, string>;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
  let body: string | undefined;
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  } else if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method ?? (body === undefined ? 'GET' : 'POST'),
      headers,
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(TIMEOUT_MS),
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
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new CliError(`${url} answered ${response.status} with something other than a JSON object`, EXIT.usage);
  return { status: response.status, headers: response.headers, body: parsed as Record<string, unknown> };
}

const succeeded = (answer: Answer) => answer.status === 200 && answer.body['ok'] !== false;

/** The issuer and token endpoint, from discovery: DPoP `htu` and assertion `aud` name the issuer's URLs, whatever URL reached it. */
async function discover(base: string): Promise<{ issuer: string; tokenEndpoint: string }> {
  const answer = await call(`${base}/.well-known/openid-configuration`);
  const issuer = answer.body['issuer'];
  const tokenEndpoint = answer.body['token_endpoint'];
  if (answer.status !== 200 || typeof issuer !== 'string' || typeof tokenEndpoint !== 'string')
    throw new CliError(`${base} is not a Keyplane control plane (no OpenID discovery)`, EXIT.usage);
  return { issuer, tokenEndpoint };
}

// ---- the key file ----

interface AgentKeyFile {
  privateKey: KeyObject;
  publicJwk: JWK;
  alg: JwtAlgorithm;
  jkt: string;
}

/** What enroll learns, kept beside the key file (nothing secret): `<key>.agent.json`. */
interface AgentRecord {
  control_plane?: string;
  enrollment_id?: string;
  agent_id?: string;
  proof_id?: string;
  proof_url?: string;
}

function keyPath(options: Common): string {
  if (!options.key) throw new CliError('--key FILE is required (made by keyplane agent keygen)', EXIT.usage);
  return options.key;
}

const recordPath = (key: string) => `${key}.agent.json`;

function readRecord(key: string): AgentRecord {
  if (!existsSync(recordPath(key))) return {};
  try {
    return JSON.parse(readFileSync(recordPath(key), 'utf8')) as AgentRecord;
  } catch {
    throw new CliError(`${recordPath(key)} is not JSON`, EXIT.usage);
  }
}

function writeRecord(key: string, record: AgentRecord): void {
  writeFileSync(recordPath(key), `${JSON.stringify(record, null, 2)}\n`);
}

function publicPart(jwk: Record<string, unknown>): JWK {
  return jwk['kty'] === 'EC'
    ? { kty: 'EC', crv: 'P-256', x: jwk['x'] as string, y: jwk['y'] as string }
    : { kty: 'OKP', crv: 'Ed25519', x: jwk['x'] as string };
}

/** RFC 7638 thumbprint; jose is loaded when a key is, so `--help` and usage errors never pay for it. */
async function thumbprint(jwk: JWK): Promise<string> {
  const { calculateJwkThumbprint } = await import('jose');
  return calculateJwkThumbprint(jwk, 'sha256');
}

async function loadKey(path: string): Promise<AgentKeyFile> {
  let jwk: Record<string, unknown>;
  try {
    const mode = statSync(path).mode & 0o777;
    if ((mode & 0o077) !== 0)
      throw new CliError(`${path} is readable by others (mode ${mode.toString(8)}); chmod 600 it`, EXIT.usage);
    jwk = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`cannot read the key file ${path}: ${(error as Error).message}`, EXIT.usage);
  }
  const alg: JwtAlgorithm | null =
    jwk['kty'] === 'EC' && jwk['crv'] === 'P-256'
      ? 'ES256'
      : jwk['kty'] === 'OKP' && jwk['crv'] === 'Ed25519'
        ? 'EdDSA'
        : null;
  if (!alg || typeof jwk['d'] !== 'string')
    throw new CliError(`${path} is not a P-256 or Ed25519 private JWK`, EXIT.usage);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: jwk as never, format: 'jwk' });
  } catch {
    throw new CliError(`${path} holds no valid private key`, EXIT.usage);
  }
  const publicJwk = publicPart(jwk);
  return { privateKey, publicJwk, alg, jkt: await thumbprint(publicJwk) };
}

/** A DPoP proof (RFC 9449 §4.2) by the agent key for `POST <url>`. */
function dpopProof(key: AgentKeyFile, url: string, nonce?: string): string {
  return signJwt(
    { typ: 'dpop+jwt', jwk: key.publicJwk },
    {
      htm: 'POST',
      htu: url,
      jti: randomBytes(16).toString('base64url'),
      iat: Math.floor(Date.now() / 1000),
      ...(nonce ? { nonce } : {}),
    },
    key.privateKey,
    key.alg,
  );
}

/** POSTs with a DPoP proof; a `use_dpop_nonce` answer with `DPoP-Nonce` is retried once with that nonce (RFC 9449 §8). */
async function postWithProof(
  transport: string,
  htu: string,
  key: AgentKeyFile,
  init: { json?: unknown; form?: Record<string, string>; headers?: Record<string, string> },
): Promise<Answer> {
  const first = await call(transport, {
    ...init,
    method: 'POST',
    headers: { ...init.headers, dpop: dpopProof(key, htu) },
  });
  const nonce = first.headers.get('dpop-nonce');
  const wantsNonce = first.body['reason'] === 'use_dpop_nonce' || first.body['error'] === 'use_dpop_nonce';
  if (!nonce || !wantsNonce) return first;
  return call(transport, { ...init, method: 'POST', headers: { ...init.headers, dpop: dpopProof(key, htu, nonce) } });
}

function output(options: Common, json: Record<string, unknown>, lines: string[]): void {
  if (options.json) say(JSON.stringify(json));
  else for (const line of lines) say(line);
}

async function withRefusals(options: Common, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    if (error instanceof Refused && options.json) say(JSON.stringify(error.answer.body));
    throw error;
  }
}

// ---- the commands ----

/** `keygen`: a fresh private JWK in a new file with mode 0600; prints the public JWK and its thumbprint. */
export async function keygen(options: Common & { alg?: string; force?: boolean }): Promise<void> {
  const path = keyPath(options);
  const alg = (options.alg ?? 'ES256') as JwtAlgorithm;
  if (alg !== 'ES256' && alg !== 'EdDSA')
    throw new CliError('--alg must be ES256 (P-256) or EdDSA (Ed25519)', EXIT.usage);
  if (existsSync(path) && !options.force) throw new CliError(`${path} exists; pass --force to replace it`, EXIT.usage);
  const pair = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  const jwk = pair.privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
  // Created with 0600 and chmod'ed again, in case the file existed with a wider mode.
  writeFileSync(path, `${JSON.stringify({ ...jwk, alg })}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  const publicJwk = publicPart(jwk);
  const jkt = await thumbprint(publicJwk);
  progress(`wrote the private key to ${path} (mode 0600); it never leaves this machine`);
  output(options, { ok: true, key_file: path, alg, publicJwk, jkt }, [
    `public key: ${JSON.stringify(publicJwk)}`,
    `thumbprint (jkt): ${jkt}`,
  ]);
}

/**
 * `enroll`: begins an enrollment with the public key, prints the owner code and where the owner
 * types it, polls the status (a progress line on stderr) until approved, then completes with a
 * nonce-bound DPoP proof by the key. The ids are written to `<key>.agent.json`.
 */
export async function enroll(
  options: Common & { name?: string; kind?: string; visibility?: string; interval?: string },
): Promise<void> {
  const base = baseUrl(options.controlPlane);
  const path = keyPath(options);
  if (!options.name) throw new CliError('--name is required', EXIT.usage);
  const intervalMs = Math.max(100, Number(options.interval ?? 2) * 1000);
  if (!Number.isFinite(intervalMs)) throw new CliError('--interval must be a number of seconds', EXIT.usage);
  const key = await loadKey(path);
  const { issuer } = await discover(base);
  const begun = await call(`${base}/auth/agents/proof/enroll/begin`, {
    json: {
      name: options.name,
      subjectKind: options.kind ?? 'ai_agent',
      publicJwk: key.publicJwk,
      ...(options.visibility ? { visibility: options.visibility } : {}),
    },
  });
  if (!succeeded(begun)) throw new Refused(begun, 'cannot begin the enrollment');
  const enrollmentId = String(begun.body['enrollment_id']);
  // The page's form is filled in with the enrollment id from this link; the owner types the code.
  const approveUrl = `${issuer}/account/agents?enrollment=${encodeURIComponent(enrollmentId)}`;
  writeRecord(path, { control_plane: base, enrollment_id: enrollmentId });
  if (options.json)
    progress(
      JSON.stringify({
        ok: true,
        enrollment_id: enrollmentId,
        owner_code: begun.body['owner_code'],
        approve_url: approveUrl,
        expires_at: begun.body['expires_at'],
      }),
    );
  else {
    say(`enrollment id: ${enrollmentId}`);
    say(`owner code: ${String(begun.body['owner_code'])}`);
    say(`the owner approves at ${approveUrl} (signed in with a passkey) before ${String(begun.body['expires_at'])}`);
  }
  for (;;) {
    const status = await call(`${base}/auth/agents/proof/enroll/status`, { json: { enrollment_id: enrollmentId } });
    if (!succeeded(status)) throw new Refused(status, 'cannot read the enrollment status');
    const state = String(status.body['status']);
    const left = Math.max(0, Math.round((Date.parse(String(status.body['expires_at'])) - Date.now()) / 1000));
    progress(
      `enrollment ${enrollmentId}: ${state} (${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')} left)`,
    );
    if (state === 'approved') break;
    if (state !== 'pending_approval')
      throw new Refused(
        { ...status, body: { ok: false, reason: 'enrollment_unknown', message: `the enrollment is ${state}` } },
        'cannot enroll',
      );
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const completePath = '/auth/agents/proof/enroll/complete';
  const done = await postWithProof(`${base}${completePath}`, `${issuer}${completePath}`, key, {
    json: { enrollment_id: enrollmentId },
  });
  if (!succeeded(done)) throw new Refused(done, 'cannot complete the enrollment');
  const record = {
    control_plane: base,
    enrollment_id: enrollmentId,
    agent_id: String(done.body['agent_id']),
    proof_id: String(done.body['proof_id']),
    proof_url: String(done.body['proof_url']),
  };
  writeRecord(path, record);
  output(options, { ok: true, ...record }, [`agent_id: ${record.agent_id}`, `proof_url: ${record.proof_url}`]);
}

/** `status`: the enrollment's state until it completes, then the agent's public profile (its state and claims). */
export async function status(options: Common): Promise<void> {
  const path = keyPath(options);
  const record = readRecord(path);
  const base = baseUrl(options.controlPlane ?? record.control_plane);
  if (!record.proof_id) {
    if (!record.enrollment_id)
      throw new CliError(
        `${path} has not been enrolled yet (no ${recordPath(path)}); run keyplane agent enroll`,
        EXIT.usage,
      );
    const answer = await call(`${base}/auth/agents/proof/enroll/status`, {
      json: { enrollment_id: record.enrollment_id },
    });
    if (!succeeded(answer)) throw new Refused(answer, 'cannot read the enrollment status');
    output(options, { ...answer.body, enrollment_id: record.enrollment_id }, [
      `enrollment ${record.enrollment_id}: ${String(answer.body['status'])} (expires ${String(answer.body['expires_at'])})`,
    ]);
    return;
  }
  const answer = await call(`${base}/agent/${encodeURIComponent(record.proof_id)}.json`);
  if (answer.status === 404)
    throw new Refused(
      answer,
      `agent ${record.agent_id ?? ''}: its Proof Link is private (or unknown); the owner sees it on /account/agents`,
    );
  if (answer.status !== 200) throw new Refused(answer, 'cannot read the Proof Link');
  const claims = (answer.body['claims'] ?? {}) as Record<string, { status: string }>;
  output(options, { ok: true, agent_id: record.agent_id, ...answer.body }, [
    `agent ${record.agent_id ?? ''} (${String(answer.body['name'])}): ${String(answer.body['state'])}`,
    ...Object.entries(claims).map(([name, claim]) => `  ${name}: ${claim.status}`),
    `proof_url: ${record.proof_url ?? ''}`,
  ]);
}

function commitment(name: string, hex: string | undefined, file: string | undefined): string {
  if (hex !== undefined && file !== undefined)
    throw new CliError(`give --${name}-commitment or --${name}, not both`, EXIT.usage);
  if (hex !== undefined) {
    if (!HEX64.test(hex)) throw new CliError(`--${name}-commitment must be a lower-case hex SHA-256`, EXIT.usage);
    return hex;
  }
  if (file === undefined)
    throw new CliError(
      `a run proof needs --${name} FILE (hashed here, never sent) or --${name}-commitment HEX`,
      EXIT.usage,
    );
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`, EXIT.usage);
  }
}

interface ProveOptions extends Common {
  run?: boolean;
  audience?: string;
  task?: string;
  input?: string;
  output?: string;
  taskCommitment?: string;
  inputCommitment?: string;
  outputCommitment?: string;
  startedAt?: string;
  finishedAt?: string;
}

/** `prove`: a challenge, then verify (or run, with a commitment-only run proof) with a DPoP proof carrying its nonce; prints the token. */
export async function prove(options: ProveOptions): Promise<void> {
  const path = keyPath(options);
  const record = readRecord(path);
  const base = baseUrl(options.controlPlane ?? record.control_plane);
  if (!record.proof_id || !record.agent_id)
    throw new CliError(
      `${path} has no enrolled agent (no agent in ${recordPath(path)}); run keyplane agent enroll`,
      EXIT.usage,
    );
  const purpose = options.run ? 'run' : 'verify';
  const commitments = options.run
    ? {
        task_commitment: commitment('task', options.taskCommitment, options.task),
        input_commitment: commitment('input', options.inputCommitment, options.input),
        output_commitment: commitment('output', options.outputCommitment, options.output),
      }
    : null;
  const key = await loadKey(path);
  const { issuer } = await discover(base);
  const challenge = await call(`${base}/api/agent-proof/challenge`, { json: { proof_id: record.proof_id, purpose } });
  if (!succeeded(challenge)) throw new Refused(challenge, 'cannot get a challenge');
  const challengeId = String(challenge.body['challenge_id']);
  const now = new Date().toISOString();
  let runProof: RunProof | undefined;
  if (commitments) {
    const unsigned = {
      format: 'svc-agent-run-proof-v1' as const,
      agent_id: record.agent_id,
      challenge_id: challengeId,
      ...commitments,
      started_at: options.startedAt ?? now,
      finished_at: options.finishedAt ?? now,
    };
    const sig = signRunProof(unsigned, key.privateKey, key.alg);
    runProof = { ...unsigned, sig };
  }
  const endpoint = `/api/agent-proof/${purpose}`;
  const proof = dpopProof(key, `${issuer}${endpoint}`, String(challenge.body['nonce']));
  const answer = await call(`${base}${endpoint}`, {
    method: 'POST',
    headers: { dpop: proof },
    json: {
      proof_id: record.proof_id,
      challenge_id: challengeId,
      ...(options.audience ? { audience: options.audience } : {}),
      ...(runProof ? { run_proof: runProof } : {}),
    },
  });
  if (!succeeded(answer)) throw new Refused(answer, `cannot ${purpose}`);
  output(options, { ...answer.body, ...(runProof ? { run_proof: runProof } : {}) }, [String(answer.body['token'])]);
  progress(
    `${purpose === 'run' ? 'agent-run+jwt' : 'agent-proof+jwt'} for ${record.agent_id}, valid ${String(answer.body['expires_in'])} s`,
  );
}

/** `token`: the RFC 7523 jwt-bearer grant with a DPoP proof by the agent key; prints the access token. */
export async function token(options: Common & { clientId?: string; resource?: string; scope?: string }): Promise<void> {
  const path = keyPath(options);
  const record = readRecord(path);
  const base = baseUrl(options.controlPlane ?? record.control_plane);
  if (!options.clientId)
    throw new CliError('--client-id is required (a client the owner approved a grant for)', EXIT.usage);
  if (!record.agent_id)
    throw new CliError(
      `${path} has no enrolled agent (no agent in ${recordPath(path)}); run keyplane agent enroll`,
      EXIT.usage,
    );
  const key = await loadKey(path);
  const { tokenEndpoint } = await discover(base);
  const now = Math.floor(Date.now() / 1000);
  // RFC 7523 §3: iss = sub = the agent, aud = the token endpoint, a short exp and a one-use jti.
  const assertion = signJwt(
    { typ: 'JWT' },
    {
      iss: record.agent_id,
      sub: record.agent_id,
      aud: tokenEndpoint,
      iat: now,
      exp: now + 120,
      jti: randomBytes(16).toString('base64url'),
    },
    key.privateKey,
    key.alg,
  );
  const secret = readClientSecret();
  const form: Record<string, string> = {
    grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
    assertion,
    ...(secret ? {} : { client_id: options.clientId }),
    ...(options.resource ? { resource: options.resource } : {}),
    ...(options.scope ? { scope: options.scope } : {}),
  };
  const headers = secret
    ? {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`,
      }
    : undefined;
  const answer = await postWithProof(`${base}/auth/token`, tokenEndpoint, key, {
    form,
    ...(headers ? { headers } : {}),
  });
  if (answer.status !== 200 || typeof answer.body['access_token'] !== 'string')
    throw new Refused(answer, 'the token endpoint refused');
  output(options, answer.body, [String(answer.body['access_token'])]);
  progress(
    `${String(answer.body['token_type'])} token for ${record.agent_id}, scope ${String(answer.body['scope'] ?? '')}, expires in ${String(answer.body['expires_in'])} s`,
  );
}

/**
 * `grant`: the operator (KEYPLANE_ADMIN_TOKEN) approves a grant for the enrolled agent at a client
 * that admits agents, on the owner's behalf; owners approve on /account/agents/{agent} instead.
 */
export async function grant(options: Common & { clientId?: string; resource?: string; scope?: string }): Promise<void> {
  const path = keyPath(options);
  const record = readRecord(path);
  const base = baseUrl(options.controlPlane ?? record.control_plane);
  if (!options.clientId) throw new CliError('--client-id is required (a client that admits agents)', EXIT.usage);
  if (!options.scope) throw new CliError("--scope is required (within the client's registered scope)", EXIT.usage);
  if (!record.agent_id)
    throw new CliError(
      `${path} has no enrolled agent (no agent in ${recordPath(path)}); run keyplane agent enroll`,
      EXIT.usage,
    );
  const token = readAdminToken();
  if (!token) throw new CliError("set KEYPLANE_ADMIN_TOKEN to the control plane's admin (operator) token", EXIT.usage);
  const answer = await call(`${base}/admin/agents/${encodeURIComponent(record.agent_id)}/grants`, {
    json: {
      client_id: options.clientId,
      scope: options.scope,
      ...(options.resource ? { resource: options.resource } : {}),
    },
    headers: { authorization: `Bearer ${token}` },
  });
  if (!succeeded(answer)) throw new Refused(answer, 'cannot approve the grant');
  output(options, answer.body, [
    `grant_id: ${String(answer.body['grant_id'])}`,
    `next: keyplane agent token --key ${path} --client-id ${options.clientId}`,
  ]);
}

export function agentCommands(program: Command): void {
  const agent = program
    .command('agent')
    .description(
      'Agent identity from a shell: make a key, enroll it with an owner, prove it, get tokens. Exit 0 done, 1 refused, 2 usage or network error.',
    );
  const common = (command: Command) =>
    command
      .requiredOption(
        '--key <file>',
        "the agent's private JWK file (mode 0600); enroll keeps the ids in <file>.agent.json",
      )
      .option('--json', 'print the result (or the refusal) as one JSON object');
  common(
    agent
      .command('keygen')
      .description(
        'Make a P-256 (ES256) or Ed25519 (EdDSA) key pair; write the private JWK with mode 0600; print the public JWK and thumbprint.',
      ),
  )
    .option('--alg <alg>', 'ES256 or EdDSA', 'ES256')
    .option('--force', 'replace an existing file')
    .action((options) => withRefusals(options, () => keygen(options)));
  common(
    agent
      .command('enroll')
      .description(
        "Begin an enrollment, print the owner code, wait for the owner's approval, then complete it with a DPoP proof by the key.",
      ),
  )
    .option('--control-plane <url>', 'base URL of the control plane')
    .requiredOption('--name <name>', "the agent's display name")
    .option('--kind <kind>', 'subject kind (ai_agent, bot, automation, device, …)', 'ai_agent')
    .option('--visibility <visibility>', 'private, unlisted or public (default private)')
    .option('--interval <seconds>', 'status polling interval', '2')
    .action((options) => withRefusals(options, () => enroll(options)));
  common(
    agent
      .command('status')
      .description("The enrollment's state, or the enrolled agent's state and claims from its Proof Link."),
  )
    .option('--control-plane <url>', 'base URL of the control plane (default: the one enroll used)')
    .action((options) => withRefusals(options, () => status(options)));
  common(
    agent
      .command('prove')
      .description(
        'Answer a fresh challenge with a DPoP proof and print the agent-proof (or, with --run, agent-run) token.',
      ),
  )
    .option('--control-plane <url>', 'base URL of the control plane (default: the one enroll used)')
    .option('--audience <aud>', "the token's audience (default the issuer)")
    .option('--run', 'a run proof: commitments to task, input and output')
    .option('--task <file>', 'hash this file as the task commitment (the file is never sent)')
    .option('--input <file>', 'hash this file as the input commitment')
    .option('--output <file>', 'hash this file as the output commitment')
    .option('--task-commitment <hex>', 'a SHA-256 computed elsewhere')
    .option('--input-commitment <hex>', 'a SHA-256 computed elsewhere')
    .option('--output-commitment <hex>', 'a SHA-256 computed elsewhere')
    .option('--started-at <time>', 'RFC 3339 start of the run (default now)')
    .option('--finished-at <time>', 'RFC 3339 end of the run (default now)')
    .action((options) => withRefusals(options, () => prove(options)));
  common(
    agent
      .command('grant')
      .description(
        "The operator (KEYPLANE_ADMIN_TOKEN) approves a grant for this agent at a client that admits agents, on the owner's behalf.",
      ),
  )
    .option('--control-plane <url>', 'base URL of the control plane (default: the one enroll used)')
    .requiredOption('--client-id <id>', 'a client registered with access.agents (or the jwt-bearer grant type)')
    .requiredOption('--scope <scope>', "the grant's scope, within the client's")
    .option('--resource <uri>', 'one of the resources the client registered (RFC 8707)')
    .action((options) => withRefusals(options, () => grant(options)));
  common(
    agent
      .command('token')
      .description(
        'Get an access token by the RFC 7523 jwt-bearer grant with DPoP (client secret, if any, from KEYPLANE_CLIENT_SECRET).',
      ),
  )
    .option('--control-plane <url>', 'base URL of the control plane (default: the one enroll used)')
    .requiredOption('--client-id <id>', 'the client the owner approved a grant for')
    .option('--resource <uri>', 'the resource (RFC 8707)')
    .option('--scope <scope>', "a narrower scope than the grant's")
    .action((options) => withRefusals(options, () => token(options)));
}
