import { EncryptJWT, type JWTPayload } from 'jose';
import { createDecipheriv, createHash } from 'node:crypto';

/**
 * The gateway's browser session lives only in cookies (no per-user state, so replicas scale out: docs/architecture.md#the-gateway-and-the-control-plane): a JWE
 * (`dir` + `A256GCM`) under a key list where the newest key encrypts and every listed key
 * decrypts, so keys rotate without signing anyone out. Expiry is inside the ciphertext.
 * Large values are split into `<name>.0`, `<name>.1`, … so no cookie passes the ~4 KB limit
 * browsers enforce (the oauth2-proxy 431 lesson is to keep the total small, too).
 */

export const SESSION_COOKIE = 'kp_gate_session';
export const LOGIN_COOKIE = 'kp_gate_login';
/** Set by a sign-out, read once: the next page without a session says "signed out" instead of asking to sign in. */
export const SIGNED_OUT_COOKIE = 'kp_gate_signed_out';
const SIGNED_OUT_SECONDS = 600;
/**
 * Set when the control plane refused this browser's account for this gateway (`access_denied` at
 * the callback): the next pages without a session show the 403 page instead of sending the
 * browser back to a sign-in that would be refused again, until it expires or the person asks for
 * another account (docs/gateway.md#access-rules).
 */
export const REFUSED_COOKIE = 'kp_gate_refused';
const REFUSED_SECONDS = 60;
/** Largest value per cookie, leaving room for the name and attributes under 4096 bytes. */
export const CHUNK_SIZE = 3800;
const MAX_CHUNKS = 8;

export interface CookieKey {
  /** 32 bytes (A256GCM with `dir`). */
  key: Uint8Array;
}

/** Derives the `kid` of a cookie key (not secret: a hash prefix of the key). */
export function cookieKeyId(key: Uint8Array): string {
  let kid = kids.get(key);
  if (kid === undefined) {
    kid = createHash('sha256').update('keyplane:gate-cookie-kid').update(key).digest('base64url').slice(0, 12);
    kids.set(key, kid);
  }
  return kid;
}
const kids = new WeakMap<Uint8Array, string>();

/** What a session cookie holds. `exp` (seconds) is set by the codec. */
export interface GateSession {
  /** Random id of this session (canary bucket, single-flight refresh key). */
  sid: string;
  sub: string;
  principalType: 'human' | 'agent';
  assurance: string;
  email?: string;
  emailVerified?: boolean;
  /** `preferred_username` of the ID token (scope `profile`), to name the account on the gateway's pages. */
  username?: string;
  /** The `orgs` claim of the ID token (scope `orgs`), passed on as `X-Auth-Orgs` and in the assertion. */
  orgs?: Array<{ slug: string; role: 'owner' | 'admin' | 'member' }>;
  /** The `groups` claim of the ID token (scope `groups`), passed on as `X-Auth-Groups` and in the assertion. */
  groups?: string[];
  /** The connection of a federated sign-in (`idp`, `idp_name` of the ID token), passed on as `X-Auth-Idp` and in the assertion. */
  idp?: { id: string; name: string };
  scopes: string[];
  /** When the user authenticated at the control plane (seconds). */
  authTime?: number;
  /** The control-plane session this one came from (`sid` of its ID token): the signed config's deny list names it when revoked. */
  idpSid?: string;
  /** When the cookie expires (seconds); set by the codec from `ttlSeconds`, ignored when writing. */
  exp?: number;
  /** Tokens from the control plane, for refresh and logout; never logged. */
  accessToken?: string;
  accessTokenExpiresAt?: number;
  refreshToken?: string;
  idToken?: string;
}

/** One login in flight (code flow with PKCE): one cookie per `state`, so parallel tabs never clash. */
export interface LoginState {
  state: string;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
  acrValues?: string;
  /** The session this sign-in (or step-up) replaces: its `sid` and cookie expiry (seconds), ended when it succeeds. */
  replaces?: { sid: string; exp: number };
}

type Use = 'session' | 'login';

/** `__Host-` pins a cookie to this host, https and Path=/ (RFC 6265bis §4.1.3.2). */
export function cookieName(base: string, secure: boolean): string {
  return secure ? `__Host-${base}` : base;
}

export function loginCookieName(state: string, secure: boolean): string {
  return cookieName(`${LOGIN_COOKIE}.${state}`, secure);
}

function attributes(secure: boolean, maxAgeSeconds: number): string {
  return `Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}; Max-Age=${maxAgeSeconds}`;
}

async function seal(
  payload: JWTPayload,
  use: Use,
  keys: readonly CookieKey[],
  now: number,
  ttlSeconds: number,
): Promise<string> {
  const newest = keys[0];
  if (!newest) throw new TypeError('no cookie key');
  const iat = Math.floor(now / 1000);
  return new EncryptJWT({ ...payload, use })
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: cookieKeyId(newest.key) })
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttlSeconds)
    .encrypt(newest.key);
}

const B64URL = /^[A-Za-z0-9_-]*$/;

/**
 * Opens a compact JWE (`dir` + `A256GCM`, RFC 7516 §7.1 / RFC 7518 §5.3) with node:crypto.
 * It runs on every proxied request, where jose's WebCrypto path cost about 150 µs here; this is
 * the same format jose writes (the tests open jose's output both ways), checked as strictly:
 * exact algorithms, no `zip` or `crit`, a 96-bit IV and a 128-bit tag, `exp` and `iat` present.
 */
async function open(jwe: string, use: Use, keys: readonly CookieKey[], now: number): Promise<JWTPayload | null> {
  const parts = jwe.split('.');
  if (parts.length !== 5 || !parts.every((part) => B64URL.test(part))) return null;
  const [protectedHeader, encryptedKey, iv, ciphertext, tag] = parts as [string, string, string, string, string];
  if (encryptedKey !== '') return null;
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(protectedHeader, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (header['alg'] !== 'dir' || header['enc'] !== 'A256GCM' || 'zip' in header || 'crit' in header) return null;
  const key = keys.find((candidate) => cookieKeyId(candidate.key) === header['kid']);
  if (!key || key.key.length !== 32) return null;
  const ivBytes = Buffer.from(iv, 'base64url');
  const tagBytes = Buffer.from(tag, 'base64url');
  if (ivBytes.length !== 12 || tagBytes.length !== 16) return null;
  let payload: JWTPayload;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, ivBytes, { authTagLength: 16 });
    decipher.setAAD(Buffer.from(protectedHeader, 'ascii'));
    decipher.setAuthTag(tagBytes);
    const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
    payload = JSON.parse(plaintext.toString('utf8')) as JWTPayload;
  } catch {
    return null;
  }
  if (!payload || typeof payload !== 'object' || typeof payload.exp !== 'number' || typeof payload.iat !== 'number')
    return null;
  // As jose: expired once `exp` is not after now (no tolerance).
  if (payload.exp <= Math.floor(now / 1000)) return null;
  // A login cookie must never pass as a session, nor the other way round.
  if (payload['use'] !== use) return null;
  return payload;
}

export interface SessionCookieOptions {
  keys: readonly CookieKey[];
  now: number;
  secure: boolean;
  ttlSeconds: number;
  /** Names of cookies the request carried, so stale chunks are cleared. */
  present?: readonly string[];
}

/** Seals a session and returns the Set-Cookie values: one cookie, or numbered chunks when large. */
export async function writeSessionCookies(session: GateSession, options: SessionCookieOptions): Promise<string[]> {
  const { exp: _exp, ...fields } = session;
  const jwe = await seal(fields as unknown as JWTPayload, 'session', options.keys, options.now, options.ttlSeconds);
  const base = cookieName(SESSION_COOKIE, options.secure);
  const attrs = attributes(options.secure, options.ttlSeconds);
  const written: Array<[string, string]> = [];
  if (jwe.length <= CHUNK_SIZE) written.push([base, jwe]);
  else {
    const count = Math.ceil(jwe.length / CHUNK_SIZE);
    if (count > MAX_CHUNKS) throw new RangeError('the session is too large for cookies');
    for (let index = 0; index < count; index++)
      written.push([`${base}.${index}`, jwe.slice(index * CHUNK_SIZE, (index + 1) * CHUNK_SIZE)]);
  }
  const names = new Set(written.map(([name]) => name));
  const stale = sessionCookieNames(options.present ?? [], options.secure).filter((name) => !names.has(name));
  return [
    ...written.map(([name, value]) => `${name}=${value}; ${attrs}`),
    ...stale.map((name) => clearCookie(name, options.secure)),
  ];
}

/** The session cookie names among `names` (single or chunked). */
export function sessionCookieNames(names: readonly string[], secure: boolean): string[] {
  const base = cookieName(SESSION_COOKIE, secure);
  return names.filter(
    (name) => name === base || (name.startsWith(`${base}.`) && /^\d+$/.test(name.slice(base.length + 1))),
  );
}

/** Reads the session from the request's cookies; null when absent, tampered, under an unknown key or expired. */
export async function readSessionCookies(
  cookies: Readonly<Record<string, string>>,
  options: { keys: readonly CookieKey[]; now: number; secure: boolean },
): Promise<GateSession | null> {
  const base = cookieName(SESSION_COOKIE, options.secure);
  let jwe = cookies[base];
  if (jwe === undefined) {
    const parts: string[] = [];
    for (let index = 0; index < MAX_CHUNKS; index++) {
      const part = cookies[`${base}.${index}`];
      if (part === undefined) break;
      parts.push(part);
    }
    if (parts.length === 0) return null;
    jwe = parts.join('');
  }
  const payload = await open(jwe, 'session', options.keys, options.now);
  if (!payload || typeof payload['sid'] !== 'string' || typeof payload['sub'] !== 'string') return null;
  const { use: _use, iat: _iat, ...session } = payload;
  return session as unknown as GateSession;
}

/** Set-Cookie values that remove every session cookie the request carried. */
export function clearSessionCookies(present: readonly string[], secure: boolean): string[] {
  const names = sessionCookieNames(present, secure);
  const base = cookieName(SESSION_COOKIE, secure);
  if (!names.includes(base)) names.push(base);
  return names.map((name) => clearCookie(name, secure));
}

/** The marker a sign-out leaves: no secret, only that this browser just signed out here. */
export function signedOutCookie(secure: boolean): string {
  return `${cookieName(SIGNED_OUT_COOKIE, secure)}=1; ${attributes(secure, SIGNED_OUT_SECONDS)}`;
}

/** The marker of a refused account: no secret, only that the control plane just refused this browser here. */
export function refusedCookie(secure: boolean): string {
  return `${cookieName(REFUSED_COOKIE, secure)}=1; ${attributes(secure, REFUSED_SECONDS)}`;
}

export function clearCookie(name: string, secure: boolean): string {
  return `${name}=; ${attributes(secure, 0)}`;
}

/** Seals one login in flight into its own cookie, named after its `state`. */
export async function writeLoginCookie(
  login: LoginState,
  options: { keys: readonly CookieKey[]; now: number; secure: boolean; ttlSeconds: number },
): Promise<string> {
  const jwe = await seal({ ...login } as unknown as JWTPayload, 'login', options.keys, options.now, options.ttlSeconds);
  return `${loginCookieName(login.state, options.secure)}=${jwe}; ${attributes(options.secure, options.ttlSeconds)}`;
}

/** Opens the login cookie for `state`; null when absent, tampered, expired or for another state. */
export async function readLoginCookie(
  cookies: Readonly<Record<string, string>>,
  state: string,
  options: { keys: readonly CookieKey[]; now: number; secure: boolean },
): Promise<LoginState | null> {
  if (!/^[A-Za-z0-9_-]{16,128}$/.test(state)) return null;
  const jwe = cookies[loginCookieName(state, options.secure)];
  if (!jwe) return null;
  const payload = await open(jwe, 'login', options.keys, options.now);
  if (!payload || payload['state'] !== state) return null;
  const { use: _use, iat: _iat, exp: _exp, ...login } = payload;
  return login as unknown as LoginState;
}

/** Parses a Cookie header into name → value (first occurrence wins, as browsers send the most specific first). */
export function parseCookieHeader(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index <= 0) continue;
    const name = part.slice(0, index).trim();
    if (!name || name in out) continue;
    out[name] = part.slice(index + 1).trim();
  }
  return out;
}
