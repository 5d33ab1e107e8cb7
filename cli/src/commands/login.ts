import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { baseUrl, requestJson } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

const DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';
const TIMEOUT_MS = 10_000;

interface Options {
  controlPlane?: string;
  clientId?: string;
  scope: string;
  credentials?: string;
  json?: boolean;
}

/** Where the tokens go unless `--credentials` says: `~/.config/keyplane/credentials.json`, mode 0600. */
export function defaultCredentialsPath(): string {
  return join(homedir(), '.config', 'keyplane', 'credentials.json');
}

/** One form POST (RFC 6749 §3.2 and RFC 8628 §3.1 take forms); the JSON answer with its status. */
async function postForm(
  url: string,
  form: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      redirect: 'error',
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  } catch (error) {
    throw new CliError(`cannot reach ${url}: ${(error as Error).message}`, EXIT.usage);
  }
  const body = (await response.json().catch(() => null)) as Record<string, unknown> | null;
  if (!body || typeof body !== 'object')
    throw new CliError(`${url} answered ${response.status} without JSON`, EXIT.usage);
  return { status: response.status, body };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `keyplane login`: signs the CLI in through the device authorization grant (RFC 8628). It asks
 * the control plane for a device code, tells the operator where to approve it (stderr), polls the
 * token endpoint as §3.5 says (`slow_down` adds 5 s), verifies the ID token against the JWKS and
 * writes the tokens to the credentials file, readable by the owner only.
 */
export async function runLogin(options: Options): Promise<void> {
  const base = baseUrl(options.controlPlane);
  if (!options.clientId)
    throw new CliError('--client-id is required (a client registered for the device grant)', EXIT.usage);
  const discovery = await requestJson('GET', `${base}/.well-known/openid-configuration`);
  const deviceEndpoint = discovery.body['device_authorization_endpoint'];
  const tokenEndpoint = discovery.body['token_endpoint'];
  const issuer = discovery.body['issuer'];
  if (typeof deviceEndpoint !== 'string' || typeof tokenEndpoint !== 'string' || typeof issuer !== 'string')
    throw new CliError(`${base} does not offer the device authorization grant`, EXIT.failed);

  const started = await postForm(deviceEndpoint, { client_id: options.clientId, scope: options.scope });
  if (started.status !== 200)
    throw new CliError(
      `the device authorization was refused: ${String(started.body['error'] ?? started.status)}${started.body['error_description'] ? ` (${String(started.body['error_description'])})` : ''}`,
      EXIT.failed,
    );
  const { device_code: deviceCode, user_code: userCode, verification_uri: uri } = started.body;
  const complete = started.body['verification_uri_complete'] as string | undefined;
  progress(`To sign in, open ${complete ?? uri}`);
  progress(`and check that it shows the code ${String(userCode)} (or enter it at ${String(uri)}).`);

  let interval = Number(started.body['interval'] ?? 5) * 1000;
  const deadline = Date.now() + Number(started.body['expires_in'] ?? 600) * 1000;
  let tokens: Record<string, unknown> | undefined;
  while (!tokens) {
    if (Date.now() > deadline)
      throw new CliError('the code expired before it was approved; run login again', EXIT.failed);
    await sleep(interval);
    const polled = await postForm(tokenEndpoint, {
      grant_type: DEVICE_CODE,
      device_code: String(deviceCode),
      client_id: options.clientId,
    });
    if (polled.status === 200) tokens = polled.body;
    else if (polled.body['error'] === 'authorization_pending') continue;
    else if (polled.body['error'] === 'slow_down') interval += 5000;
    else if (polled.body['error'] === 'access_denied') throw new CliError('the sign-in was declined', EXIT.failed);
    else if (polled.body['error'] === 'expired_token')
      throw new CliError('the code expired before it was approved; run login again', EXIT.failed);
    else
      throw new CliError(`the token endpoint refused: ${String(polled.body['error'] ?? polled.status)}`, EXIT.failed);
  }

  const [{ createRemoteJWKSet }, { checkJwt }] = await Promise.all([import('jose'), import('#lib/crypto/jwt.js')]);
  const jwksUri = discovery.body['jwks_uri'];
  let claims: Record<string, unknown> = {};
  if (typeof tokens['id_token'] === 'string' && typeof jwksUri === 'string') {
    try {
      ({ payload: claims } = await checkJwt(tokens['id_token'], createRemoteJWKSet(new URL(jwksUri)), {
        algorithms: ['ES256'],
        issuer,
        audience: options.clientId,
        now: Date.now(),
      }));
    } catch (error) {
      throw new CliError(`the ID token does not verify: ${(error as Error).message}`, EXIT.failed);
    }
  }
  const path = options.credentials ?? defaultCredentialsPath();
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const saved = {
    issuer,
    client_id: options.clientId,
    token_type: tokens['token_type'],
    access_token: tokens['access_token'],
    ...(tokens['refresh_token'] ? { refresh_token: tokens['refresh_token'] } : {}),
    ...(tokens['id_token'] ? { id_token: tokens['id_token'] } : {}),
    scope: tokens['scope'],
    expires_at: new Date(Date.now() + Number(tokens['expires_in'] ?? 0) * 1000).toISOString(),
  };
  writeFileSync(path, JSON.stringify(saved, null, 2) + '\n', { mode: 0o600 });
  chmodSync(path, 0o600);
  const who = {
    sub: claims['sub'],
    username: claims['preferred_username'],
    assurance: claims['acr'],
    credentials: path,
  };
  if (options.json) return say(JSON.stringify({ ok: true, ...who }));
  say(
    `signed in${who.username ? ` as ${String(who.username)}` : ''}${who.sub ? ` (${String(who.sub)})` : ''}${who.assurance ? ` at ${String(who.assurance)}` : ''}; tokens in ${path}`,
  );
}

export function loginCommand(program: Command): void {
  program
    .command('login')
    .description(
      'Sign the CLI in through the device authorization grant (RFC 8628): open the printed link, approve with a passkey, and the tokens are written to the credentials file (mode 0600). Exit 0 signed in, 1 declined, expired or refused, 2 usage or network error.',
    )
    .requiredOption('--control-plane <url>', 'control plane base URL (the issuer)')
    .requiredOption(
      '--client-id <id>',
      'a client registered with the device_code grant (token_endpoint_auth_method none)',
    )
    .option('--scope <scope>', 'scopes to ask for', 'openid profile offline_access')
    .option('--credentials <file>', `where to write the tokens (default ${defaultCredentialsPath()})`)
    .option('--json', 'print the result as JSON')
    .action((options: Options) => runLogin(options));
}
