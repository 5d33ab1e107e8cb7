import type { JWTPayload } from 'jose';
import { assuranceOf, isAssuranceLevel, type AssuranceLevel } from './assurance.js';
import type { KeyplaneClient, TokenSet } from './client.js';
import { CookieCipher, clearChunked, readChunked, writeChunked, type CookieJar } from './cookie-session.js';
import { KeyplaneSdkError } from './errors.js';

export interface WebOptions {
  /** Secrets for the encrypted cookies, newest first, each at least 32 characters. */
  cookieSecrets: string[];
  /** Session cookie name (default `kp_sdk`); the pending sign-in uses `<name>_login`. */
  cookieName?: string;
  /** Starts a sign-in (GET, `?return=/path`, optional `?acr=<level>` for a step-up). Default `/login`. */
  loginPath?: string;
  /** Signs out (POST, same-origin only). Default `/logout`. */
  logoutPath?: string;
  /** A registered `post_logout_redirect_uri`; without one the issuer shows its signed-out page. */
  postLogoutRedirectUri?: string;
  /** How long the session cookie lives (default 14 days; the refresh token's own limits still apply). */
  sessionMaxAgeSeconds?: number;
  /** Refresh this many seconds before the access token expires (default 30). */
  refreshLeewaySeconds?: number;
  /** Secure cookies (default: when the redirect URI is https). */
  secure?: boolean;
}

/** The signed-in user as a route sees it. */
export interface Session {
  sub: string;
  /** `svc.assurance` (or `acr`) of the latest ID token. */
  assurance?: AssuranceLevel;
  principal?: { type: 'human' | 'agent'; id: string; [key: string]: unknown };
  claims: Record<string, unknown>;
  accessToken: string;
  tokenType: string;
  expiresAt: number;
}

interface StoredSession extends JWTPayload {
  at: string;
  tt: string;
  rt?: string;
  it?: string;
  exa: number;
  c: Record<string, unknown>;
}

interface PendingLogin extends JWTPayload {
  st: string;
  no: string;
  cv: string;
  ret: string;
  acr?: AssuranceLevel;
  ma?: number;
}

const LOGIN_TTL = 600;

/**
 * The browser side of the SDK, independent of the web framework: pending sign-ins and sessions
 * in encrypted cookies, refreshed through the client's single-flight refresh.
 */
export class WebSessions {
  readonly loginPath: string;
  readonly logoutPath: string;
  readonly callbackPath: string;
  readonly appOrigin: string;
  private readonly cookieName: string;
  private readonly secure: boolean;
  private readonly sessions: CookieCipher;
  private readonly logins: CookieCipher;

  constructor(
    readonly client: KeyplaneClient,
    private readonly options: WebOptions,
  ) {
    const redirect = new URL(client.options.redirectUri);
    this.callbackPath = redirect.pathname;
    this.appOrigin = redirect.origin;
    this.loginPath = options.loginPath ?? '/login';
    this.logoutPath = options.logoutPath ?? '/logout';
    this.cookieName = options.cookieName ?? 'kp_sdk';
    this.secure = options.secure ?? redirect.protocol === 'https:';
    this.sessions = new CookieCipher(options.cookieSecrets, 'session');
    this.logins = new CookieCipher(options.cookieSecrets, 'login');
  }

  /** Where the browser goes to sign in; remembers state, nonce, verifier and the return path. */
  async beginLogin(jar: CookieJar, returnTo: string | undefined, stepUp?: string): Promise<string> {
    const acr = isAssuranceLevel(stepUp) ? stepUp : undefined;
    const pending = acr ? await this.client.requireAssurance(acr).stepUp() : await this.client.authorizationUrl();
    const login: PendingLogin = {
      st: pending.state,
      no: pending.nonce,
      cv: pending.codeVerifier,
      ret: safeReturnPath(returnTo),
      ...(acr ? { acr, ma: 0 } : {}),
    };
    jar.set(`${this.cookieName}_login`, await this.logins.seal(login, LOGIN_TTL), {
      maxAgeSeconds: LOGIN_TTL,
      secure: this.secure,
    });
    return pending.url;
  }

  /** Finishes the sign-in at the redirect URI; answers the path to return to. */
  async finishLogin(jar: CookieJar, callbackUrl: string): Promise<string> {
    const name = `${this.cookieName}_login`;
    const raw = jar.all()[name];
    const login = raw ? await this.logins.open<PendingLogin>(raw) : null;
    jar.clear(name, { secure: this.secure });
    if (!login) throw new KeyplaneSdkError('state_mismatch', 'no sign-in is pending in this browser (or it expired)');
    const tokens = await this.client.handleCallback(callbackUrl, {
      state: login.st,
      nonce: login.no,
      codeVerifier: login.cv,
      ...(login.acr ? { acrValues: login.acr, maxAge: login.ma ?? 0 } : {}),
    });
    await this.write(jar, tokens);
    return login.ret;
  }

  /** The session of this request, refreshed when its access token is (nearly) expired; null when none. */
  async session(jar: CookieJar): Promise<Session | null> {
    const raw = readChunked(jar, this.cookieName);
    if (!raw) return null;
    const stored = await this.sessions.open<StoredSession>(raw);
    if (!stored) {
      clearChunked(jar, this.cookieName, { secure: this.secure });
      return null;
    }
    const leeway = (this.options.refreshLeewaySeconds ?? 30) * 1000;
    if (stored.exa - leeway > Date.now()) return view(stored);
    if (!stored.rt) return this.drop(jar);
    let tokens: TokenSet;
    try {
      tokens = await this.client.refresh(stored.rt);
    } catch (error) {
      // A refused refresh (revoked, expired, signed out elsewhere) ends the session; anything else
      // (the issuer unreachable) is the caller's to see.
      if (error instanceof KeyplaneSdkError && error.status !== undefined && error.status < 500) return this.drop(jar);
      throw error;
    }
    if (tokens.claims.sub !== undefined && tokens.claims.sub !== stored.c.sub) return this.drop(jar);
    return view(await this.write(jar, tokens, stored));
  }

  /** Ends the session here and revokes its refresh token; answers where the browser goes next. */
  async logout(jar: CookieJar): Promise<string> {
    const raw = readChunked(jar, this.cookieName);
    const stored = raw ? await this.sessions.open<StoredSession>(raw) : null;
    clearChunked(jar, this.cookieName, { secure: this.secure });
    if (stored?.rt) await this.client.revoke(stored.rt, 'refresh_token').catch(() => undefined);
    return this.client.logoutUrl({
      ...(stored?.it ? { idTokenHint: stored.it } : {}),
      ...(this.options.postLogoutRedirectUri ? { postLogoutRedirectUri: this.options.postLogoutRedirectUri } : {}),
    });
  }

  /** A state-changing request is same-origin only when its Origin is the app's (CSRF on sign-out). */
  isSameOrigin(origin: string | undefined): boolean {
    return origin === this.appOrigin;
  }

  private drop(jar: CookieJar): null {
    clearChunked(jar, this.cookieName, { secure: this.secure });
    return null;
  }

  private async write(jar: CookieJar, tokens: TokenSet, previous?: StoredSession): Promise<StoredSession> {
    const claims = Object.keys(tokens.claims).length > 0 ? tokens.claims : (previous?.c ?? {});
    const stored: StoredSession = {
      at: tokens.accessToken,
      tt: tokens.tokenType,
      exa: tokens.expiresAt,
      c: claims,
      ...((tokens.refreshToken ?? previous?.rt) ? { rt: tokens.refreshToken ?? previous?.rt } : {}),
      ...((tokens.idToken ?? previous?.it) ? { it: tokens.idToken ?? previous?.it } : {}),
    };
    const maxAge = this.options.sessionMaxAgeSeconds ?? 14 * 86_400;
    writeChunked(jar, this.cookieName, await this.sessions.seal(stored, maxAge), {
      maxAgeSeconds: maxAge,
      secure: this.secure,
    });
    return stored;
  }
}

function view(stored: StoredSession): Session {
  const claims = stored.c;
  const svc = claims.svc as { principal?: Session['principal'] } | undefined;
  const assurance = assuranceOf(claims);
  return {
    sub: String(claims.sub),
    claims,
    accessToken: stored.at,
    tokenType: stored.tt,
    expiresAt: stored.exa,
    ...(assurance ? { assurance } : {}),
    ...(svc?.principal ? { principal: svc.principal } : {}),
  };
}

/**
 * Only a path on this app is a place to return to: `//host`, `/\host`, schemes and control
 * characters (browsers drop tabs and newlines, turning `/%09/host` into `//host`) become `/`.
 */
export function safeReturnPath(value: string | undefined): string {
  if (!value || !value.startsWith('/') || /[\u0000-\u001f\u007f\\]/.test(value)) return '/';
  const base = new URL('https://app.invalid');
  const resolved = new URL(value, base);
  if (resolved.origin !== base.origin || value.startsWith('//')) return '/';
  return `${resolved.pathname}${resolved.search}${resolved.hash}`;
}
