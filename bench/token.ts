/**
 * bench:token — refresh-token grants and code exchanges per second at the token endpoint,
 * Keyplane against node-oidc-provider (configured equivalently) in the same run, both judged
 * against the raw ES256 sign bound measured first (the bench:keys method).
 *
 * Method: both providers are driven in-process through light-my-request (fastify's `inject`
 * for Keyplane, the same library on oidc-provider's Node request handler), one request at a
 * time, so the figures are the server's work per grant on one core without sockets. Codes are
 * minted outside the timed section (Keyplane: through real authorize requests with a passkey
 * session and a remembered approval; oidc-provider: saved through its AuthorizationCode
 * model), then exchanged in timed batches. Refresh runs one rotating chain per provider.
 * Every response is checked (status 200 and the expected tokens), so a failing grant cannot
 * look fast.
 */
import { generateKeyPairSync, randomBytes, createHash } from 'node:crypto';
import inject from 'light-my-request';
import Provider from 'oidc-provider';
import { benchControlPlane, benchTap, describeRun, es256Bound, log, measure, SECONDS } from './harness.js';
import { ADMIN, RESOURCE, REDIRECT, basicAuth, exchangeCode, goodRequest, obtainCode, pkcePair, refresh, registerClient } from '../test/helpers/oidc.js';

const { tap, runTeardowns } = benchTap();

/** A rotating refresh chain: each grant's new refresh token feeds the next. */
async function measureChain(name: string, first: string, op: (token: string) => Promise<string>): Promise<number> {
  let token = first;
  for (let i = 0; i < 20; i++) token = await op(token);
  let count = 0;
  const start = process.hrtime.bigint();
  const end = start + BigInt(SECONDS * 1e9);
  while (process.hrtime.bigint() < end) {
    for (let i = 0; i < 20; i++) token = await op(token);
    count += 20;
  }
  const rate = count / (Number(process.hrtime.bigint() - start) / 1e9);
  log(`  ${name}: ${Math.round(rate)} /s (${count})`);
  return rate;
}

/** Logs the JOSE header of the first access token each provider issues (both must be ES256 at+jwt). */
const shown = new Set<string>();
function showAccessTokenHeader(what: string, token: string): void {
  const key = what.split(' ')[0]!;
  if (shown.has(key)) return;
  shown.add(key);
  const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as Record<string, unknown>;
  log(`  ${key} access token header: alg=${String(header['alg'])} typ=${String(header['typ'])}`);
}

function expectTokens(status: number, body: string, what: string): Record<string, string> {
  if (status !== 200) throw new Error(`${what} failed: ${status} ${body.slice(0, 300)}`);
  const json = JSON.parse(body) as Record<string, string>;
  if (!json['access_token'] || !json['refresh_token'] || !json['id_token']) throw new Error(`${what}: missing tokens: ${body.slice(0, 300)}`);
  showAccessTokenHeader(what, json['access_token']);
  return json;
}

// ---- Keyplane ----

async function keyplane(): Promise<{ exchange: number; refresh: number }> {
  const { app, browser } = await benchControlPlane(tap, { adminToken: ADMIN });
  const client = await registerClient(app);
  const mint = async (n: number) => {
    const out: Array<{ code: string; verifier: string }> = [];
    for (let i = 0; i < n; i++) {
      const { verifier, challenge } = pkcePair();
      const { code } = await obtainCode(browser, goodRequest(client, challenge, { resource: RESOURCE }));
      out.push({ code, verifier });
    }
    return out;
  };
  const exchange = (await measure('Keyplane code exchange', mint, async ({ code, verifier }) => {
    const res = await exchangeCode(app, client, code, verifier, {}, { resource: RESOURCE });
    expectTokens(res.statusCode, res.body, 'Keyplane exchange');
  })).wall;
  const [first] = await mint(1);
  const initial = await exchangeCode(app, client, first!.code, first!.verifier, {}, { resource: RESOURCE });
  const refreshRate = await measureChain('Keyplane refresh (rotating)', expectTokens(initial.statusCode, initial.body, 'Keyplane exchange')['refresh_token']!, async (token) => {
    const res = await refresh(app, client, token);
    return expectTokens(res.statusCode, res.body, 'Keyplane refresh')['refresh_token']!;
  });
  return { exchange, refresh: refreshRate };
}

// ---- node-oidc-provider, configured equivalently ----

async function nodeOidcProvider(): Promise<{ exchange: number; refresh: number }> {
  const issuer = 'http://localhost:4401';
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'ES256', use: 'sig' };
  const client = { client_id: 'notes', client_secret: randomBytes(32).toString('base64url') };
  const provider = new Provider(issuer, {
    clients: [{
      ...client, redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic', id_token_signed_response_alg: 'ES256',
    }],
    jwks: { keys: [jwk] },
    enabledJWA: { idTokenSigningAlgValues: ['ES256'] },
    scopes: ['openid', 'email', 'profile', 'offline_access'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub, email: 'bench@example.com', email_verified: true, name: 'Bench' }) }),
    // Equivalent to Keyplane: PKCE for every client, rotation on every refresh, JWT access
    // tokens (RFC 9068) for the resource, ES256 everywhere.
    pkce: { required: () => true },
    rotateRefreshToken: true,
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: 'openid', audience: RESOURCE, accessTokenFormat: 'jwt', accessTokenTTL: 600, jwt: { sign: { alg: 'ES256' } } }),
      },
    },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, RefreshToken: 30 * 86_400, Grant: 30 * 86_400 },
  });
  const handler = provider.callback();
  const grant = new provider.Grant({ accountId: 'usr_bench', clientId: client.client_id });
  grant.addOIDCScope('openid email profile offline_access');
  grant.addResourceScope(RESOURCE, 'openid');
  const grantId = await grant.save();
  const authTime = Math.floor(Date.now() / 1000);
  const mint = async (n: number) => {
    const out: Array<{ code: string; verifier: string }> = [];
    for (let i = 0; i < n; i++) {
      const verifier = randomBytes(32).toString('base64url');
      const code = new provider.AuthorizationCode({
        accountId: 'usr_bench', clientId: client.client_id, grantId, redirectUri: REDIRECT, scope: 'openid email profile offline_access',
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'), codeChallengeMethod: 'S256', nonce: 'n-456',
        authTime, acr: 'passkey', amr: ['pop', 'user'], resource: RESOURCE, sessionUid: 'bench-session',
      });
      out.push({ code: await code.save(), verifier });
    }
    return out;
  };
  const post = async (form: Record<string, string>) => inject(handler as never, {
    method: 'POST', url: '/token', remoteAddress: '127.0.0.1',
    headers: { host: 'localhost:4401', authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  });
  const exchangeOnce = async ({ code, verifier }: { code: string; verifier: string }) => {
    const res = await post({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, resource: RESOURCE });
    return expectTokens(res.statusCode, res.body, 'oidc-provider exchange');
  };
  const exchange = (await measure('oidc-provider code exchange', mint, async (input) => void (await exchangeOnce(input)))).wall;
  const [first] = await mint(1);
  const refreshRate = await measureChain('oidc-provider refresh (rotating)', (await exchangeOnce(first!))['refresh_token']!, async (token) => {
    const res = await post({ grant_type: 'refresh_token', refresh_token: token, resource: RESOURCE });
    return expectTokens(res.statusCode, res.body, 'oidc-provider refresh')['refresh_token']!;
  });
  return { exchange, refresh: refreshRate };
}

describeRun('bench:token');
try {
  const bound = (await es256Bound()).wall;
  const kp = await keyplane();
  let other: { exchange: number; refresh: number } | null = null;
  try {
    other = await nodeOidcProvider();
  } catch (error) {
    log(`  oidc-provider could not be measured: ${(error as Error).message}`);
  }
  // A code exchange signs two JWTs (ID token, access token); a refresh signs two as well.
  process.stdout.write('\n| grant | Keyplane (/s) | node-oidc-provider (/s) | ES256 bound ÷ 2 signatures (/s) | Keyplane share of bound |\n|---|---|---|---|---|\n');
  for (const [name, k, o] of [['code exchange', kp.exchange, other?.exchange], ['refresh (rotating)', kp.refresh, other?.refresh]] as const) {
    process.stdout.write(`| ${name} | ${Math.round(k)} | ${o === undefined ? 'n/a' : Math.round(o)} | ${Math.round(bound / 2)} | ${((k / (bound / 2)) * 100).toFixed(1)} % |\n`);
  }
} finally {
  await runTeardowns();
}
