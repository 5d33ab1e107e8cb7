import type { RawParams } from './authorization-request.js';

/**
 * Pushed authorization requests (RFC 9126): the client POSTs its authorization parameters to
 * the PAR endpoint and gets back a `request_uri` standing for them, which it then sends to the
 * authorization endpoint with its `client_id` alone. Pure: the caller stores and takes the
 * pushed parameters.
 */

/** RFC 9126 §2.2: the form of a pushed request's `request_uri`. */
export const PUSHED_REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';
/** RFC 9126 §2.2 suggests a short life; FAPI 2.0 §5.3.2.2 caps it below 600 s. Keyplane: 60 s. */
export const PUSHED_REQUEST_LIFETIME_SECONDS = 60;
/** The random part of a pushed `request_uri`: 256 bits, base64url. */
const ID = /^[A-Za-z0-9_-]{43}$/;

/** Parameters the PAR endpoint never takes inside a pushed request. */
const NOT_PUSHABLE = ['request_uri', 'resume', 'approval'];

export type PushedParamsCheck = { ok: true; params: RawParams } | { ok: false; description: string };

/** The `request_uri` for a pushed request's random id. */
export function pushedRequestUri(id: string): string {
  return `${PUSHED_REQUEST_URI_PREFIX}${id}`;
}

/** Whether a `request_uri` is of the pushed form (whatever its id). */
export function isPushedRequestUri(uri: string): boolean {
  return uri.startsWith(PUSHED_REQUEST_URI_PREFIX);
}

/** The id inside a pushed `request_uri`, or null when it is not one this server could have issued. */
export function pushedRequestIdOf(uri: string): string | null {
  if (!isPushedRequestUri(uri)) return null;
  const id = uri.slice(PUSHED_REQUEST_URI_PREFIX.length);
  return ID.test(id) ? id : null;
}

/**
 * The authorization parameters of a PAR body, without the client's credentials. RFC 9126 §2.1:
 * `request_uri` is refused inside a push, and the `client_id` must be the authenticated client's.
 */
export function pushedParamsOf(body: RawParams, clientId: string): PushedParamsCheck {
  const present = NOT_PUSHABLE.find((name) => body[name] !== undefined);
  if (present !== undefined) return { ok: false, description: `${present} must not be sent to the PAR endpoint` };
  if (body.client_id !== undefined && body.client_id !== clientId)
    return { ok: false, description: 'client_id differs from the authenticated client' };
  const params: RawParams = {};
  for (const [name, value] of Object.entries(body)) {
    if (name === 'client_secret' || name === 'client_assertion' || name === 'client_assertion_type') continue;
    params[name] = value;
  }
  params.client_id = clientId;
  return { ok: true, params };
}

/**
 * RFC 9449 §10.1: a DPoP proof sent with the push binds the code to its key. A `dpop_jkt`
 * sent too must name the same key; without one, the proof's thumbprint becomes it.
 */
export function bindPushedDpop(params: RawParams, proofJkt: string | null): PushedParamsCheck {
  if (proofJkt === null) return { ok: true, params };
  const sent = params.dpop_jkt;
  if (sent !== undefined && sent !== proofJkt)
    return { ok: false, description: 'dpop_jkt differs from the key of the DPoP proof sent with the request' };
  return { ok: true, params: { ...params, dpop_jkt: proofJkt } };
}
