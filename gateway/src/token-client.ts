import { request } from 'undici';
import type { Tracer } from '@opentelemetry/api';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_SERVER_ADDRESS } from '@opentelemetry/semantic-conventions';
import { callTraced } from '#lib/telemetry/client-span.js';
import { formatClientSecretBasic } from '#lib/oauth/client-auth.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { DependencyUnavailableError } from '#lib/errors/dependency-outage.js';

/**
 * The gateway as a confidential client at the control plane's token endpoint (RFC 6749 §3.2):
 * the authorization code with its PKCE verifier (RFC 7636 §4.5), and the refresh token
 * (RFC 6749 §6), authenticated with `client_secret_basic` (§2.3.1). Explicit timeouts: a slow
 * control plane costs the sign-in or refresh a clear 503, never a hung browser request.
 */

/** Headers and body timeout of one token request, unless `controlPlaneTimeoutMs` says otherwise. */
export const TOKEN_TIMEOUT_MS = 5_000;

export interface TokenSet {
  accessToken: string;
  /** Seconds from now. */
  expiresIn: number;
  scope: string[];
  idToken?: string;
  refreshToken?: string;
}

/**
 * A refused or failed token request. `refused`: the control plane answered with an OAuth error
 * (`invalid_grant` and the like: the code or refresh token is spent); `unavailable`: no usable
 * answer (network, timeout, 5xx, a body that is not a token response), worth retrying.
 */
export class TokenEndpointError extends Error {
  constructor(
    readonly kind: 'refused' | 'unavailable',
    readonly error: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'TokenEndpointError';
  }
}

export interface TokenClientOptions {
  controlPlane: string;
  clientId: string;
  clientSecret: string;
  timeoutMs?: number;
  /** Told when the control plane cannot be reached and when it answers again. */
  monitor?: DependencyMonitor;
  /** Each call a client span whose `traceparent` the control plane continues; absent when tracing is off. */
  tracer?: Tracer;
}

export interface TokenClient {
  exchangeCode(input: { code: string; codeVerifier: string; redirectUri: string }): Promise<TokenSet>;
  refresh(refreshToken: string): Promise<TokenSet>;
  /** RFC 7009 revocation of a refresh token at the control plane's `/auth/revoke`; never throws. */
  revoke?(refreshToken: string): Promise<boolean>;
  /**
   * RFC 7662: whether the control plane still holds `token` active. Throws
   * `DependencyUnavailableError` when it gives no answer (a 503 for the caller, never a refusal).
   */
  introspect?(token: string): Promise<boolean>;
}

export function createTokenClient(options: TokenClientOptions): TokenClient {
  const timeout = options.timeoutMs ?? TOKEN_TIMEOUT_MS;
  const authorization = formatClientSecretBasic(options.clientId, options.clientSecret);
  const base = options.controlPlane.replace(/\/$/, '');

  /**
   * One authenticated form POST to the control plane, traced: its status and its JSON body (null
   * when it has none or `json` is false). Throws when no answer came.
   */
  function postForm(
    path: string,
    form: Record<string, string>,
    json = true,
  ): Promise<{ status: number; body: unknown }> {
    const attributes = { [ATTR_HTTP_REQUEST_METHOD]: 'POST', [ATTR_SERVER_ADDRESS]: new URL(base).hostname };
    let body: unknown = null;
    return callTraced(options.tracer, `POST ${path}`, attributes, async (traceHeaders) => {
      const res = await request(`${base}${path}`, {
        method: 'POST',
        headers: {
          authorization,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          ...traceHeaders,
        },
        body: new URLSearchParams(form).toString(),
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      if (json) body = await res.body.json().catch(() => null);
      else await res.body.dump();
      return res.statusCode;
    }).then((status) => ({ status, body }));
  }

  async function call(form: Record<string, string>): Promise<TokenSet> {
    let status: number;
    let body: unknown;
    try {
      ({ status, body } = await postForm('/auth/token', form));
    } catch (error) {
      options.monitor?.failure('control_plane', error);
      throw new TokenEndpointError('unavailable', undefined, 'the control plane did not answer the token request');
    }
    options.monitor?.succeeded('control_plane');
    const fields = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    if (status !== 200) {
      const error = typeof fields['error'] === 'string' ? fields['error'] : undefined;
      // RFC 6749 §5.2 errors are 400/401; a 5xx or 429 says nothing about the grant itself.
      if ((status === 400 || status === 401) && error)
        throw new TokenEndpointError('refused', error, `the control plane refused the token request (${error})`);
      throw new TokenEndpointError('unavailable', error, `the token endpoint answered ${status}`);
    }
    const {
      access_token: accessToken,
      expires_in: expiresIn,
      scope,
      id_token: idToken,
      refresh_token: refreshToken,
    } = fields;
    if (
      typeof accessToken !== 'string' ||
      typeof expiresIn !== 'number' ||
      !Number.isFinite(expiresIn) ||
      expiresIn <= 0
    ) {
      throw new TokenEndpointError('unavailable', undefined, 'the token response lacks access_token or expires_in');
    }
    return {
      accessToken,
      expiresIn: Math.floor(expiresIn),
      scope: typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [],
      ...(typeof idToken === 'string' ? { idToken } : {}),
      ...(typeof refreshToken === 'string' ? { refreshToken } : {}),
    };
  }

  async function revoke(token: string): Promise<boolean> {
    try {
      const { status } = await postForm('/auth/revoke', { token, token_type_hint: 'refresh_token' }, false);
      return status === 200;
    } catch {
      return false;
    }
  }

  async function introspect(token: string): Promise<boolean> {
    let status: number;
    let body: unknown;
    try {
      ({ status, body } = await postForm('/auth/introspect', { token, token_type_hint: 'access_token' }));
    } catch (error) {
      throw (
        options.monitor?.failure('control_plane', error) ??
        new DependencyUnavailableError('control_plane', 'unreachable', 'the introspection request failed', {
          cause: error,
        })
      );
    }
    const active = (body as { active?: unknown } | null)?.active;
    if (status !== 200 || typeof active !== 'boolean')
      throw new DependencyUnavailableError('control_plane', 'refused', `the introspection endpoint answered ${status}`);
    options.monitor?.succeeded('control_plane');
    return active;
  }

  return {
    revoke,
    introspect,
    exchangeCode: ({ code, codeVerifier, redirectUri }) =>
      call({ grant_type: 'authorization_code', code, code_verifier: codeVerifier, redirect_uri: redirectUri }),
    refresh: (refreshToken) => call({ grant_type: 'refresh_token', refresh_token: refreshToken }),
  };
}

export function isTokenEndpointError(error: unknown): error is TokenEndpointError {
  return error instanceof Error && error.name === 'TokenEndpointError';
}
