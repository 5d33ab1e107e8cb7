import { createHash, createPrivateKey, randomBytes, type JsonWebKey } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { TOTP } from 'otpauth';
import { verifyReceiptProof, type InclusionProof } from '#lib/ledger/verify-receipt.js';
import { SoftAuthenticator } from './soft-authenticator.js';

/**
 * What an operator's data holds, written through the HTTP API of any Keyplane version and checked
 * again through today's: an account with a passkey (a software authenticator whose private key is
 * kept), TOTP and backup codes, a confidential client with its secret, a refresh token and sealed
 * receipts. The upgrade fixtures (test/fixtures/upgrades/) were written by `writeOperatorData`
 * against earlier releases; the backup round trip writes the same data with today's.
 */
export interface OperatorData {
  issuer: string;
  /** When the data was written (the writing server's clock, ms): checks run just after it. */
  writtenAt: number;
  username: string;
  identityId: string;
  passkey: { id: string; privateJwk: JsonWebKey; rpId: string; userHandle: string; counter: number };
  totpSecret: string;
  /** The backup codes, the first one used already. */
  backupCodes: string[];
  client: { client_id: string; client_secret: string; redirect_uri: string };
  refreshToken: string;
  receipts: string[];
}

export interface HttpAnswer {
  status: number;
  location: string | undefined;
  body: string;
  json(): any;
}

/** One HTTP exchange with a control plane, whether a process (fetch) or in-process (inject). */
export type Http = (
  method: 'GET' | 'POST',
  path: string,
  request?: { headers?: Record<string, string>; body?: string },
) => Promise<HttpAnswer & { setCookies: string[] }>;

export function fetchHttp(base: string): Http {
  return async (method, path, request = {}) => {
    const res = await fetch(`${base}${path}`, {
      method,
      redirect: 'manual',
      headers: request.headers ?? {},
      ...(request.body === undefined ? {} : { body: request.body }),
    });
    const body = await res.text();
    return {
      status: res.status,
      location: res.headers.get('location') ?? undefined,
      body,
      json: () => JSON.parse(body),
      setCookies: res.headers.getSetCookie(),
    };
  };
}

export function injectHttp(app: FastifyInstance): Http {
  return async (method, path, request = {}) => {
    const res = await app.inject({
      method,
      url: path,
      headers: request.headers ?? {},
      ...(request.body === undefined ? {} : { payload: request.body }),
    });
    const cookies = res.headers['set-cookie'];
    return {
      status: res.statusCode,
      location: res.headers.location as string | undefined,
      body: res.body,
      json: () => res.json(),
      setCookies: cookies === undefined ? [] : [cookies].flat(),
    };
  };
}

/** A browser's cookies and Origin over an Http: every request a signed-in page would send. */
export class Visitor {
  private readonly cookies = new Map<string, string>();
  constructor(
    private readonly http: Http,
    private readonly origin: string,
  ) {}

  async send(method: 'GET' | 'POST', path: string, body?: unknown, type = 'application/json'): Promise<HttpAnswer> {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers['cookie'] = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method === 'POST') headers['origin'] = this.origin;
    if (body !== undefined) headers['content-type'] = type;
    const answer = await this.http(method, path, {
      headers,
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    for (const line of answer.setCookies) {
      const [pair, ...attributes] = line.split(';');
      const name = pair!.slice(0, pair!.indexOf('=')).trim();
      const value = pair!.slice(pair!.indexOf('=') + 1).trim();
      if (value === '' || attributes.some((a) => /^\s*max-age=0\b/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return answer;
  }

  async ok(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> {
    const answer = await this.send(method, path, body);
    if (answer.status !== 200) throw new Error(`${method} ${path}: ${answer.status} ${answer.body.slice(0, 300)}`);
    return answer.json();
  }
}

const REDIRECT = 'https://notes.example.com/callback';
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const decodeEntities = (value: string) =>
  value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

export function totpNow(secret: string, at: number): string {
  return new TOTP({ secret, algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: at });
}

function tokenRequest(http: Http, client: OperatorData['client'], fields: Record<string, string>, secret?: string) {
  return http('POST', '/auth/token', {
    headers: {
      authorization: basic(client.client_id, secret ?? client.client_secret),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: form(fields),
  });
}

/** Follows the authorization page a browser would (the one-tap form the first time) to a code. */
async function authorize(visitor: Visitor, clientId: string, challenge: string): Promise<string> {
  const query = form({
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid email profile offline_access',
    state: 'st-upgrade',
    nonce: 'n-upgrade',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  let res = await visitor.send('GET', `/auth/authorize?${query}`);
  if (res.status === 200 && res.body.includes('data-action="continue"')) {
    const fields: Record<string, string> = {};
    for (const match of res.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
      fields[match[1]!] = decodeEntities(match[2]!);
    res = await visitor.send('POST', '/auth/authorize', form(fields), 'application/x-www-form-urlencoded');
  }
  const code = res.location ? new URL(res.location).searchParams.get('code') : null;
  if (!code) throw new Error(`authorize gave no code: ${res.status} ${res.location ?? res.body.slice(0, 300)}`);
  return code;
}

/**
 * Writes the data through the API every release since wave 1 serves. `adminToken` must be the
 * server's; `now` is its clock (for the TOTP code).
 */
export async function writeOperatorData(
  http: Http,
  options: {
    issuer: string;
    adminToken: string;
    now: () => number;
    waitForSeal: (receipts: string[]) => Promise<void>;
  },
): Promise<OperatorData> {
  const origin = new URL(options.issuer).origin;
  const receipts: string[] = [];
  const keep = (answer: { receipt?: string }) => answer.receipt && receipts.push(answer.receipt);
  const ada = new Visitor(http, origin);
  const authenticator = new SoftAuthenticator(origin);
  const username = 'ada';
  const begin = await ada.ok('POST', '/auth/registration-options', { username, displayName: 'Ada' });
  const registered = await ada.ok('POST', '/auth/registration-verify', {
    user: username,
    response: authenticator.create(begin.options),
    signupToken: begin.signupToken,
  });
  keep(registered);

  const totp = await ada.ok('POST', '/auth/totp/setup');
  keep(await ada.ok('POST', '/auth/totp/confirm', { code: totpNow(totp.secret, options.now()) }));
  const recovery = await ada.ok('POST', '/auth/recovery/regenerate');
  keep(recovery);

  const clientAnswer = await http('POST', '/register', {
    headers: { authorization: `Bearer ${options.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Notes',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email profile offline_access',
      token_endpoint_auth_method: 'client_secret_basic',
    }),
  });
  if (clientAnswer.status !== 201) throw new Error(`register: ${clientAnswer.status} ${clientAnswer.body}`);
  const { client_id, client_secret } = clientAnswer.json() as { client_id: string; client_secret: string };
  const client = { client_id, client_secret, redirect_uri: REDIRECT };
  const verifier = randomBytes(32).toString('base64url');
  const code = await authorize(ada, client_id, createHash('sha256').update(verifier).digest('base64url'));
  const exchanged = await tokenRequest(http, client, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
  });
  if (exchanged.status !== 200) throw new Error(`code exchange: ${exchanged.status} ${exchanged.body}`);
  // Refreshed once, so the token kept is a rotated one, as a client holds it.
  const refreshed = await tokenRequest(http, client, {
    grant_type: 'refresh_token',
    refresh_token: exchanged.json().refresh_token,
  });
  if (refreshed.status !== 200) throw new Error(`refresh: ${refreshed.status} ${refreshed.body}`);

  // One backup code used before the upgrade: it must stay used after it.
  const used = await new Visitor(http, origin).ok('POST', '/auth/recovery/verify', {
    user: username,
    code: recovery.codes[0],
  });
  keep(used);

  await options.waitForSeal(receipts);
  const [credential] = authenticator.credentials;
  return {
    issuer: options.issuer,
    writtenAt: options.now(),
    username,
    identityId: registered.identityId,
    passkey: {
      id: credential!.id,
      privateJwk: credential!.privateKey.export({ format: 'jwk' }),
      rpId: credential!.rpId,
      userHandle: credential!.userHandle,
      counter: credential!.counter,
    },
    totpSecret: totp.secret,
    backupCodes: recovery.codes,
    client,
    refreshToken: refreshed.json().refresh_token,
    receipts,
  };
}

/** Whether every receipt written is sealed yet (the sealer runs on its own clock). */
export async function receiptsSealed(http: Http, receipts: string[]): Promise<boolean> {
  for (const hash of receipts) {
    const answer = await http('GET', `/receipts/${hash}`);
    if (answer.status !== 200 || answer.json().pending === true) return false;
  }
  return true;
}

export interface CheckResult {
  name: string;
  ok: boolean;
  detail?: string;
}

/**
 * Everything an operator's users rely on, checked through today's API: the same passkey signs in,
 * the old refresh token refreshes, the client's old secret authenticates (and a wrong one does
 * not), TOTP steps up, a backup code signs in (and the one used before does not), and every old
 * receipt verifies with its inclusion proof against the JWKS. `now` is the checking server's clock.
 */
export async function checkOperatorData(http: Http, data: OperatorData, now: () => number): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const check = async (name: string, run: () => Promise<string | undefined>) => {
    try {
      const failure = await run();
      results.push(failure === undefined ? { name, ok: true } : { name, ok: false, detail: failure });
    } catch (error) {
      results.push({ name, ok: false, detail: (error as Error).message });
    }
  };
  const origin = new URL(data.issuer).origin;
  const authenticator = new SoftAuthenticator(origin);
  authenticator.credentials.push({
    id: data.passkey.id,
    privateKey: createPrivateKey({ key: data.passkey.privateJwk, format: 'jwk' }),
    rpId: data.passkey.rpId,
    userHandle: data.passkey.userHandle,
    counter: data.passkey.counter,
  });
  const ada = new Visitor(http, origin);

  await check('the same passkey signs in', async () => {
    const begin = await ada.ok('GET', '/auth/assertion-options');
    const done = await ada.send('POST', '/auth/assertion-verify', { response: authenticator.get(begin.options) });
    if (done.status !== 200) return `assertion-verify answered ${done.status} ${done.body.slice(0, 200)}`;
    return done.json().identityId === data.identityId ? undefined : `signed in as ${done.json().identityId}`;
  });

  await check('TOTP steps the session up (and a wrong code does not)', async () => {
    const code = totpNow(data.totpSecret, now());
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const first = await ada.ok('POST', '/auth/step-up/options');
    const refused = await ada.send('POST', '/auth/step-up/verify', {
      response: authenticator.get(first.options),
      totpCode: wrong,
    });
    if (refused.status === 200) return 'a wrong TOTP code stepped up';
    const second = await ada.ok('POST', '/auth/step-up/options');
    const stepped = await ada.send('POST', '/auth/step-up/verify', {
      response: authenticator.get(second.options),
      totpCode: code,
    });
    return stepped.status === 200 && stepped.json().assurance === 'sensitive'
      ? undefined
      : `step-up answered ${stepped.status} ${stepped.body.slice(0, 200)}`;
  });

  await check('an unused backup code signs in, the one used before the upgrade does not', async () => {
    const used = await new Visitor(http, origin).send('POST', '/auth/recovery/verify', {
      user: data.username,
      code: data.backupCodes[0],
    });
    if (used.status === 200) return 'the used backup code signed in again';
    const fresh = await new Visitor(http, origin).send('POST', '/auth/recovery/verify', {
      user: data.username,
      code: data.backupCodes[1],
    });
    if (fresh.status !== 200) return `recovery/verify answered ${fresh.status} ${fresh.body.slice(0, 200)}`;
    const remaining = fresh.json().remaining;
    return remaining === data.backupCodes.length - 2 ? undefined : `${remaining} codes remain`;
  });

  await check('the client authenticates with its old secret (a wrong one is refused)', async () => {
    const wrong = await tokenRequest(
      http,
      data.client,
      { grant_type: 'refresh_token', refresh_token: data.refreshToken },
      `${data.client.client_secret}x`,
    );
    if (wrong.status !== 401) return `a wrong secret answered ${wrong.status}`;
    return undefined;
  });

  await check('the refresh token from before refreshes', async () => {
    const refreshed = await tokenRequest(http, data.client, {
      grant_type: 'refresh_token',
      refresh_token: data.refreshToken,
    });
    if (refreshed.status !== 200) return `refresh answered ${refreshed.status} ${refreshed.body.slice(0, 200)}`;
    const tokens = refreshed.json();
    return typeof tokens.access_token === 'string' && typeof tokens.refresh_token === 'string'
      ? undefined
      : `no tokens: ${refreshed.body}`;
  });

  await check('every receipt from before verifies with its proof', async () => {
    const jwks = (await http('GET', '/.well-known/jwks.json')).json() as JSONWebKeySet;
    const keys = createLocalJWKSet(jwks);
    for (const hash of data.receipts) {
      const found = await http('GET', `/receipts/${hash}`);
      if (found.status !== 200) return `receipt ${hash}: ${found.status}`;
      const body = found.json();
      if (body.pending) return `receipt ${hash} is pending`;
      const verdict = await verifyReceiptProof(
        { hash, receipt: body.receipt, proof: body.proof as InclusionProof, checkpoint: body.checkpoint },
        keys,
      );
      if (!verdict.ok) return `receipt ${hash}: ${verdict.failure}`;
    }
    return data.receipts.length > 0 ? undefined : 'no receipts to check';
  });

  await check('every receipt from before has its place in the transparency log, under a signed note', async () => {
    const { parseCheckpoint, parseNote, parseVerifierKey, isSignedBy } =
      await import('#lib/ledger/transparency/index.js');
    const note = parseNote((await http('GET', '/receipts/checkpoint')).body);
    const keys = (await http('GET', '/receipts/checkpoint/key')).body.split('\n').filter(Boolean);
    if (!keys.some((k) => isSignedBy(note, parseVerifierKey(k)))) return 'the checkpoint note is not signed by its key';
    const { size } = parseCheckpoint(note.text);
    for (const hash of data.receipts) {
      const body = (await http('GET', `/receipts/${hash}`)).json();
      if (!Number.isInteger(body.tlog_index) || !(body.tlog_index < body.tree_size && body.tree_size <= size))
        return `receipt ${hash}: tlog_index ${body.tlog_index}, tree_size ${body.tree_size}, note size ${size}`;
    }
    return undefined;
  });
  return results;
}
