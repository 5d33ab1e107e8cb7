import { createRemoteJWKSet, customFetch, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { assuranceOf, isAssuranceLevel, meetsAssurance, type AssuranceLevel } from './assurance.js';
import { DpopSigner, dpopThumbprint, generateDpopKey, type DpopKey } from './dpop.js';
import { KeyplaneSdkError } from './errors.js';
import { randomToken, s256Challenge } from './pkce.js';
import { SingleFlight } from './single-flight.js';

export interface ClientOptions {
  /** The Keyplane issuer, e.g. `https://id.example.com` (no trailing slash). */
  issuer: string;
  clientId: string;
  /** Confidential clients authenticate with `client_secret_basic`; without a secret the client is public (`none`). */
  clientSecret?: string;
  redirectUri: string;
  /** Default `openid profile email offline_access`. */
  scope?: string;
  /** RFC 8707 resource the access token is for (one of the client's registered `resources`). */
  resource?: string;
  /** `true`: sender-constrain tokens with a fresh ES256 key (RFC 9449); or bring your own key. */
  dpop?: boolean | DpopKey;
  /** How long after one JWKS fetch an unknown `kid` may trigger another (default 30 s). */
  jwksCooldownMs?: number;
  /** Seconds of clock skew accepted on `exp`, `iat`, `auth_time` (default 5). */
  clockToleranceSeconds?: number;
  /** How long a `sensitive` step-up counts after `auth_time` (default 300, Keyplane's window). */
  sensitiveWindowSeconds?: number;
  /** Replaces the global fetch (custom CA, proxies, tests). */
  fetch?: typeof fetch;
  now?: () => number;
}

export interface AuthorizationParams {
  state?: string;
  nonce?: string;
  /** Ask for at least this assurance (OIDC `acr_values`); with `maxAge: 0` this is a step-up (RFC 9470 §4). */
  acrValues?: AssuranceLevel;
  maxAge?: number;
  prompt?: 'none' | 'login' | 'consent';
  loginHint?: string;
}

/** What must survive between `authorizationUrl()` and `handleCallback()` (keep it server-side or encrypted). */
export interface PendingAuthorization {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  acrValues?: AssuranceLevel;
  maxAge?: number;
}

export interface TokenSet {
  accessToken: string;
  /** `Bearer` or `DPoP`. */
  tokenType: string;
  idToken?: string;
  refreshToken?: string;
  /** When the access token expires (epoch ms). */
  expiresAt: number;
  scope?: string;
  /** The verified ID token's claims. */
  claims: JWTPayload & Record<string, unknown>;
}

export interface VerifyIdTokenOptions {
  nonce?: string;
  maxAge?: number;
  acrValues?: AssuranceLevel;
}

export interface AssuranceRequirement {
  level: AssuranceLevel;
  /** Whether a session with these ID-token claims may go on. */
  isMetBy(claims: Record<string, unknown>): boolean;
  /** Starts the step-up: an authorization request with `acr_values` = level and `max_age=0`. */
  stepUp(params?: Omit<AuthorizationParams, 'acrValues' | 'maxAge'>): Promise<PendingAuthorization>;
}

interface ServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  end_session_endpoint?: string;
  revocation_endpoint?: string;
  authorization_response_iss_parameter_supported?: boolean;
}

export interface KeyplaneClient {
  readonly options: Readonly<ClientOptions>;
  metadata(): Promise<ServerMetadata>;
  authorizationUrl(params?: AuthorizationParams): Promise<PendingAuthorization>;
  handleCallback(callback: string | URL, pending: Omit<PendingAuthorization, 'url'>): Promise<TokenSet>;
  refresh(refreshToken: string): Promise<TokenSet>;
  verifyIdToken(idToken: string, options?: VerifyIdTokenOptions): Promise<TokenSet['claims']>;
  requireAssurance(level: AssuranceLevel): AssuranceRequirement;
  userinfo(tokens: Pick<TokenSet, 'accessToken' | 'tokenType'>): Promise<Record<string, unknown>>;
  /** A request to a resource server with the access token (and a DPoP proof for DPoP tokens, retrying once on a new nonce). */
  fetchProtected(
    url: string,
    tokens: Pick<TokenSet, 'accessToken' | 'tokenType'>,
    init?: RequestInit,
  ): Promise<Response>;
  revoke(token: string, hint?: 'refresh_token' | 'access_token'): Promise<void>;
  /** RP-initiated logout URL (OIDC RP-Initiated Logout 1.0). */
  logoutUrl(params?: { idTokenHint?: string; postLogoutRedirectUri?: string; state?: string }): Promise<string>;
}

/** A relying-party client for one Keyplane issuer. */
export function createClient(options: ClientOptions): KeyplaneClient {
  if (!/^https?:\/\/[^/]+(\/.*[^/])?$/.test(options.issuer))
    throw new TypeError('issuer must be an http(s) URL without a trailing slash');
  if (!options.clientId) throw new TypeError('clientId is required');
  new URL(options.redirectUri);
  const http = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const tolerance = options.clockToleranceSeconds ?? 5;
  const scope = options.scope ?? 'openid profile email offline_access';
  const refreshes = new SingleFlight<TokenSet>({ rememberMs: 60_000, max: 1000 });

  let discovered: Promise<ServerMetadata> | undefined;
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  let signer: Promise<DpopSigner | undefined> | undefined;

  function metadata(): Promise<ServerMetadata> {
    discovered ??= (async () => {
      const url = `${options.issuer}/.well-known/openid-configuration`;
      const res = await http(url, { headers: { accept: 'application/json' } });
      if (!res.ok)
        throw new KeyplaneSdkError('discovery_failed', `discovery at ${url} answered ${res.status}`, res.status);
      const body = (await res.json()) as ServerMetadata;
      // OIDC Discovery §4.3: the issuer in the document must be exactly the one configured.
      if (body.issuer !== options.issuer)
        throw new KeyplaneSdkError(
          'issuer_mismatch',
          `discovery names issuer ${body.issuer}, expected ${options.issuer}`,
        );
      return body;
    })().catch((error: unknown) => {
      discovered = undefined;
      throw error;
    });
    return discovered;
  }

  function dpop(): Promise<DpopSigner | undefined> {
    signer ??= (async () => {
      if (!options.dpop) return undefined;
      return new DpopSigner(options.dpop === true ? await generateDpopKey() : options.dpop);
    })();
    return signer;
  }

  async function keySet() {
    const meta = await metadata();
    jwks ??= createRemoteJWKSet(new URL(meta.jwks_uri), {
      cooldownDuration: options.jwksCooldownMs ?? 30_000,
      timeoutDuration: 5_000,
      ...(options.fetch ? { [customFetch]: options.fetch } : {}),
    });
    return jwks;
  }

  async function verifyIdToken(idToken: string, verify: VerifyIdTokenOptions = {}): Promise<TokenSet['claims']> {
    let payload: JWTPayload;
    try {
      let header: { typ?: string } = {};
      ({ payload, protectedHeader: header } = await jwtVerify(idToken, await keySet(), {
        issuer: options.issuer,
        audience: options.clientId,
        algorithms: ['ES256'],
        clockTolerance: tolerance,
        currentDate: new Date(now()),
        requiredClaims: ['sub', 'iat', 'exp'],
      }));
      // RFC 9068 §4: an access token (`at+jwt`) signed by the same key is never an ID token.
      if (header.typ !== undefined && header.typ.toUpperCase() !== 'JWT')
        throw new KeyplaneSdkError('invalid_id_token', `a ${header.typ} token is not an ID token`);
    } catch (error) {
      if (error instanceof joseErrors.JOSEError)
        throw new KeyplaneSdkError('invalid_id_token', `ID token refused: ${error.code}`);
      throw error;
    }
    // OIDC Core §3.1.3.7: with several audiences, azp must be this client.
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== options.clientId) {
      throw new KeyplaneSdkError('invalid_id_token', 'ID token azp is not this client');
    }
    if (verify.nonce !== undefined && payload.nonce !== verify.nonce)
      throw new KeyplaneSdkError('invalid_id_token', 'ID token nonce does not match this sign-in');
    if (verify.maxAge !== undefined) {
      const authTime = payload.auth_time;
      if (typeof authTime !== 'number' || Math.floor(now() / 1000) - authTime > verify.maxAge + tolerance) {
        throw new KeyplaneSdkError('invalid_id_token', 'ID token auth_time is older than max_age');
      }
    }
    if (verify.acrValues) {
      const proved = assuranceOf(payload);
      if (
        !proved ||
        !meetsAssurance(payload, verify.acrValues, {
          nowSeconds: Math.floor(now() / 1000) + tolerance,
          sensitiveWindowSeconds: Number.MAX_SAFE_INTEGER,
        })
      ) {
        throw new KeyplaneSdkError(
          'insufficient_assurance',
          `the sign-in proved ${proved ?? 'nothing'}, ${verify.acrValues} was asked`,
        );
      }
    }
    return payload as TokenSet['claims'];
  }

  /** POSTs to the token endpoint with client authentication and DPoP, retrying once on a new DPoP nonce. */
  async function tokenRequest(params: Record<string, string>): Promise<Record<string, unknown>> {
    const meta = await metadata();
    const body = new URLSearchParams(params);
    const headers = authenticate(body, { accept: 'application/json' });
    if (options.resource) body.set('resource', options.resource);
    const proofs = await dpop();
    for (let attempt = 0; ; attempt++) {
      if (proofs) headers.dpop = await proofs.proof('POST', meta.token_endpoint);
      const res = await http(meta.token_endpoint, { method: 'POST', headers, body });
      const fresh = proofs?.remember(meta.token_endpoint, res) ?? false;
      const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
      if (res.ok) return json;
      const error = typeof json.error === 'string' ? json.error : 'token_endpoint_failed';
      if (error === 'use_dpop_nonce' && fresh && attempt === 0) continue;
      throw new KeyplaneSdkError(
        error,
        typeof json.error_description === 'string' ? json.error_description : `token endpoint answered ${res.status}`,
        res.status,
      );
    }
  }

  async function toTokenSet(json: Record<string, unknown>, verify: VerifyIdTokenOptions): Promise<TokenSet> {
    if (typeof json.access_token !== 'string')
      throw new KeyplaneSdkError('token_endpoint_failed', 'the token response has no access_token');
    const idToken = typeof json.id_token === 'string' ? json.id_token : undefined;
    const claims = idToken ? await verifyIdToken(idToken, verify) : ({} as TokenSet['claims']);
    return {
      accessToken: json.access_token,
      tokenType: typeof json.token_type === 'string' ? json.token_type : 'Bearer',
      ...(idToken ? { idToken } : {}),
      ...(typeof json.refresh_token === 'string' ? { refreshToken: json.refresh_token } : {}),
      expiresAt: now() + (typeof json.expires_in === 'number' ? json.expires_in : 600) * 1000,
      ...(typeof json.scope === 'string' ? { scope: json.scope } : {}),
      claims,
    };
  }

  async function authorizationUrl(params: AuthorizationParams = {}): Promise<PendingAuthorization> {
    const meta = await metadata();
    const state = params.state ?? randomToken();
    const nonce = params.nonce ?? randomToken();
    const codeVerifier = randomToken();
    const url = new URL(meta.authorization_endpoint);
    const query: Record<string, string | undefined> = {
      client_id: options.clientId,
      redirect_uri: options.redirectUri,
      response_type: 'code',
      scope,
      state,
      nonce,
      code_challenge: s256Challenge(codeVerifier),
      code_challenge_method: 'S256',
      resource: options.resource,
      acr_values: params.acrValues,
      max_age: params.maxAge === undefined ? undefined : String(params.maxAge),
      prompt: params.prompt,
      login_hint: params.loginHint,
    };
    const proofs = await dpop();
    // RFC 9449 §10: bind the code to the DPoP key, so a stolen code is useless without it.
    if (proofs) query.dpop_jkt = await dpopThumbprint(proofs.key);
    for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, value);
    return {
      url: url.href,
      state,
      nonce,
      codeVerifier,
      ...(params.acrValues ? { acrValues: params.acrValues } : {}),
      ...(params.maxAge !== undefined ? { maxAge: params.maxAge } : {}),
    };
  }

  async function handleCallback(callback: string | URL, pending: Omit<PendingAuthorization, 'url'>): Promise<TokenSet> {
    const meta = await metadata();
    const params = new URL(callback).searchParams;
    if (params.get('state') !== pending.state)
      throw new KeyplaneSdkError('state_mismatch', 'the callback state is not the one this sign-in sent');
    const iss = params.get('iss');
    // RFC 9207 §2.4: the iss parameter must name our issuer (and must be present when advertised).
    if (iss !== null ? iss !== options.issuer : meta.authorization_response_iss_parameter_supported === true) {
      throw new KeyplaneSdkError('issuer_mismatch', 'the callback iss is not this issuer');
    }
    const error = params.get('error');
    if (error) throw new KeyplaneSdkError(error, params.get('error_description') ?? error);
    const code = params.get('code');
    if (!code) throw new KeyplaneSdkError('missing_code', 'the callback carries no code');
    const json = await tokenRequest({
      grant_type: 'authorization_code',
      code,
      redirect_uri: options.redirectUri,
      code_verifier: pending.codeVerifier,
    });
    return toTokenSet(json, {
      nonce: pending.nonce,
      ...(pending.maxAge !== undefined ? { maxAge: pending.maxAge } : {}),
      ...(pending.acrValues ? { acrValues: pending.acrValues } : {}),
    });
  }

  function refresh(refreshToken: string): Promise<TokenSet> {
    // A refresh token is spent at its first use and reuse revokes the family, so concurrent
    // callers with the same token share one request, and late ones get the same result.
    return refreshes.run(refreshToken, async () =>
      toTokenSet(await tokenRequest({ grant_type: 'refresh_token', refresh_token: refreshToken }), {}),
    );
  }

  async function fetchProtected(
    url: string,
    tokens: Pick<TokenSet, 'accessToken' | 'tokenType'>,
    init: RequestInit = {},
  ): Promise<Response> {
    const method = (init.method ?? 'GET').toUpperCase();
    const isDpop = tokens.tokenType.toLowerCase() === 'dpop';
    const proofs = isDpop ? await dpop() : undefined;
    if (isDpop && !proofs) throw new TypeError('a DPoP token needs a client created with dpop');
    for (let attempt = 0; ; attempt++) {
      const headers = new Headers(init.headers);
      headers.set('authorization', `${isDpop ? 'DPoP' : 'Bearer'} ${tokens.accessToken}`);
      if (proofs) headers.set('dpop', await proofs.proof(method, url, tokens.accessToken));
      const res = await http(url, { ...init, method, headers });
      const fresh = proofs?.remember(url, res) ?? false;
      // RFC 9449 §9: a resource server asks for a nonce with 401 and error="use_dpop_nonce".
      if (
        res.status === 401 &&
        fresh &&
        attempt === 0 &&
        /error="use_dpop_nonce"/.test(res.headers.get('www-authenticate') ?? '')
      )
        continue;
      return res;
    }
  }

  return {
    options: Object.freeze({ ...options }),
    metadata,
    authorizationUrl,
    handleCallback,
    refresh,
    verifyIdToken,
    requireAssurance(level: AssuranceLevel): AssuranceRequirement {
      if (!isAssuranceLevel(level)) throw new TypeError(`unknown assurance level ${String(level)}`);
      return {
        level,
        isMetBy: (claims) =>
          meetsAssurance(claims, level, {
            nowSeconds: Math.floor(now() / 1000),
            ...(options.sensitiveWindowSeconds !== undefined
              ? { sensitiveWindowSeconds: options.sensitiveWindowSeconds }
              : {}),
          }),
        stepUp: (params = {}) => authorizationUrl({ ...params, acrValues: level, maxAge: 0 }),
      };
    },
    async userinfo(tokens) {
      const meta = await metadata();
      if (!meta.userinfo_endpoint)
        throw new KeyplaneSdkError('discovery_failed', 'the issuer has no userinfo endpoint');
      const res = await fetchProtected(meta.userinfo_endpoint, tokens);
      const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
      if (!res.ok)
        throw new KeyplaneSdkError(
          typeof json.reason === 'string' ? json.reason : 'invalid_token',
          `userinfo answered ${res.status}`,
          res.status,
        );
      return json;
    },
    fetchProtected,
    async revoke(token, hint) {
      const meta = await metadata();
      if (!meta.revocation_endpoint)
        throw new KeyplaneSdkError('discovery_failed', 'the issuer has no revocation endpoint');
      const body = new URLSearchParams({ token, ...(hint ? { token_type_hint: hint } : {}) });
      const res = await http(meta.revocation_endpoint, { method: 'POST', headers: authenticate(body), body });
      // RFC 7009 §2.2: 200 whether or not the token was still valid.
      if (!res.ok) throw new KeyplaneSdkError('invalid_client', `revocation answered ${res.status}`, res.status);
    },
    async logoutUrl(params = {}) {
      const meta = await metadata();
      if (!meta.end_session_endpoint)
        throw new KeyplaneSdkError('discovery_failed', 'the issuer has no end_session_endpoint');
      const url = new URL(meta.end_session_endpoint);
      url.searchParams.set('client_id', options.clientId);
      if (params.idTokenHint) url.searchParams.set('id_token_hint', params.idTokenHint);
      if (params.postLogoutRedirectUri) url.searchParams.set('post_logout_redirect_uri', params.postLogoutRedirectUri);
      if (params.state) url.searchParams.set('state', params.state);
      return url.href;
    },
  };

  /** Client authentication: `client_secret_basic` for confidential clients, `client_id` in the body for public ones. */
  function authenticate(body: URLSearchParams, extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', ...extra };
    if (options.clientSecret === undefined) {
      body.set('client_id', options.clientId);
      return headers;
    }
    // RFC 6749 §2.3.1: both parts form-urlencoded before Base64.
    const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
    headers.authorization = `Basic ${Buffer.from(`${enc(options.clientId)}:${enc(options.clientSecret)}`).toString('base64')}`;
    return headers;
  }
}
