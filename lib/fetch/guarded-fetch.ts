import { lookup as dnsLookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import { request as plainRequest } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { isIP, type LookupFunction } from 'node:net';
import { SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import { rootCertificates } from 'node:tls';
import { fail, isKeyplaneError, type KeyplaneError } from '../errors/keyplane-error.js';
import type { Reason } from '../errors/reasons.js';
import { compileAddressList } from '../net/cidr.js';
import { classifyAddress } from './classify-address.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (the system resolver unless a test gives one). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface GuardedFetchOptions {
  /** Lets loopback, private, link-local and other non-public targets through: for tests only. */
  allowPrivateTargets?: boolean;
  /** Non-public addresses or CIDR ranges let through one by one (an internal key server); every other stays refused. */
  allowAddresses?: readonly string[];
  /** Extra trusted CA certificates (PEM), added to Node's public roots. */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>;
  /** A PEM file with extra trusted CA certificates; read when `ca` is not given. */
  caFile?: string;
  /** Largest accepted body in bytes (default 128 KiB); larger bodies are cut off and refused. */
  maxBytes?: number;
  /** Deadline for the whole fetch, every redirect and DNS look-up included (default 5000 ms). */
  timeoutMs?: number;
  /** Redirects followed at most (default 5). */
  maxRedirects?: number;
  resolver?: Resolver;
  /** The `Accept` header (default `application/json, *\/*;q=0.5`). */
  accept?: string;
  /**
   * The method (default GET). The posture scan also sends a CORS preflight (`OPTIONS`);
   * back-channel logout POSTs a form (`body`); outbound SCIM also PUTs, PATCHes and DELETEs.
   */
  method?: 'GET' | 'OPTIONS' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The request body of a POST (or PUT, PATCH), sent with its `Content-Type` from `headers`; never followed through a redirect. */
  body?: string;
  /** Extra request headers (the scan's CORS probe: `Origin`, `Access-Control-Request-Method`); never credentials. */
  headers?: Record<string, string>;
  /**
   * An `Authorization` value for this destination alone, never sent past a redirect: what its own
   * owner gave for it (a Shared Signals push stream's `authorization_header`, RFC 8935 §2), or
   * Keyplane's own client credential at an upstream's token endpoint (a connection's
   * `client_secret_basic`, RFC 6749 §2.3.1). Never a user's.
   */
  destinationAuthorization?: string;
  /** Also fetch `http:` URLs, with the same address checks: only the posture scan's plain-http leg. */
  allowHttp?: boolean;
  /** False accepts a certificate that does not verify: only the posture scan, to grade such a site. */
  verifyCertificate?: boolean;
  /** False answers a redirect as it is instead of following it (the scan records each hop). */
  followRedirects?: boolean;
  /** Aborts the fetch from outside (the scan's one budget over many requests). */
  signal?: AbortSignal;
  /** Records each fetch as a client span (docs/observability.md#traces); absent when tracing is off. */
  tracer?: Tracer;
}

export interface FetchHop {
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
}

export interface FetchedResponse extends FetchHop {
  /** The address the final response came from (after the checks). */
  address: string;
  body: Buffer;
  /** The redirect responses that led here, first hop first. */
  redirects: FetchHop[];
}

export interface CheckedTarget {
  url: URL;
  /** The checked address the connection is pinned to. */
  address: ResolvedAddress;
}

/** Every reason a guarded fetch can fail with. */
export type FetchRefusalReason = Extract<Reason, `fetch_${string}`>;

export const FETCH_DEFAULTS = { maxBytes: 131_072, timeoutMs: 5000, maxRedirects: 5 } as const;
const USER_AGENT = 'keyplane-fetch/1';
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** True when `error` is a refusal of the guarded fetcher (any `fetch_*` reason). */
export function isFetchRefusal(error: unknown): error is KeyplaneError & { reason: FetchRefusalReason } {
  return isKeyplaneError(error) && error.reason.startsWith('fetch_');
}

const systemResolver: Resolver = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

function parseTarget(input: string | URL, allowHttp = false): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw fail('fetch_invalid_url', 'the URL is not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:'))
    throw fail('fetch_not_https', 'only https URLs are fetched');
  // No credentials ever leave with a server-side fetch (RFC 3986 §3.2.1 deprecates userinfo).
  if (url.username !== '' || url.password !== '')
    throw fail('fetch_credentials_in_url', 'the URL must not carry a user name or password');
  return url;
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

function withDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(timeoutError());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(timeoutError());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function timeoutError(): KeyplaneError {
  return fail('fetch_timeout', 'the target did not answer in time');
}

async function resolveChecked(url: URL, options: GuardedFetchOptions, signal: AbortSignal): Promise<ResolvedAddress> {
  const host = hostOf(url);
  const literal = isIP(host);
  let addresses: ResolvedAddress[];
  if (literal !== 0) addresses = [{ address: host, family: literal as 4 | 6 }];
  else {
    try {
      addresses = await withDeadline((options.resolver ?? systemResolver)(host), signal);
    } catch (error) {
      if (isKeyplaneError(error)) throw error;
      addresses = [];
    }
    if (addresses.length === 0) throw fail('fetch_unresolvable', `${host} does not resolve`);
  }
  if (!options.allowPrivateTargets) {
    const allowed = options.allowAddresses?.length ? compileAddressList(options.allowAddresses) : () => false;
    // Every address is checked, not only the one used: a resolver may rotate them between look-ups.
    for (const { address } of addresses) {
      const addressClass = allowed(address) ? null : classifyAddress(address);
      if (addressClass) {
        throw fail(
          'fetch_private_address',
          `${host} resolves to a ${addressClass.replace('_', '-')} address, which is never fetched`,
          { fields: { addressClass } },
        );
      }
    }
  }
  return addresses[0]!;
}

/**
 * Checks that a URL may be fetched without fetching it: https, no user name or password, and
 * every address its host resolves to is public (unless `allowPrivateTargets`). Used to refuse a
 * URL when it is registered, long before anything fetches it.
 */
export async function checkFetchTarget(input: string | URL, options: GuardedFetchOptions = {}): Promise<CheckedTarget> {
  const url = parseTarget(input);
  const timeout = AbortSignal.timeout(options.timeoutMs ?? FETCH_DEFAULTS.timeoutMs);
  return { url, address: await resolveChecked(url, options, timeout) };
}

function trustedCa(options: GuardedFetchOptions): Array<string | Buffer> | undefined {
  const extra = options.ca ?? (options.caFile ? readFileSync(options.caFile) : undefined);
  if (extra === undefined) return undefined;
  return [...rootCertificates, ...(Array.isArray(extra) ? extra : [extra as string | Buffer])];
}

function requestOnce(
  url: URL,
  pinned: ResolvedAddress,
  ca: Array<string | Buffer> | undefined,
  options: GuardedFetchOptions,
  signal: AbortSignal,
): Promise<{ response: IncomingMessage; body?: Buffer }> {
  const host = hostOf(url);
  // The connection goes to the address that was checked, whatever a second look-up would say.
  const lookup = ((_hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (lookupOptions?.all) callback(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  }) as unknown as LookupFunction;
  const plain = url.protocol === 'http:';
  // Only credential-free headers are passed on: nothing may carry a user's identity to the target.
  const extra: Record<string, string> = Object.fromEntries(
    Object.entries(options.headers ?? {}).filter(
      ([name]) => !/^(cookie|authorization|proxy-authorization)$/i.test(name),
    ),
  );
  const requestOptions: RequestOptions = {
    method: options.method ?? 'GET',
    hostname: host,
    port: url.port || (plain ? 80 : 443),
    path: `${url.pathname}${url.search}`,
    lookup,
    // TLS still verifies the certificate for the host name (SNI is never sent for an IP literal).
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ...(ca ? { ca } : {}),
    rejectUnauthorized: options.verifyCertificate ?? true,
    agent: false,
    signal,
    headers: {
      ...extra,
      ...(options.destinationAuthorization !== undefined ? { authorization: options.destinationAuthorization } : {}),
      accept: options.accept ?? 'application/json, */*;q=0.5',
      'user-agent': USER_AGENT,
      'accept-encoding': 'identity',
      ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}),
    },
  };
  const maxBytes = options.maxBytes ?? FETCH_DEFAULTS.maxBytes;
  return new Promise((resolve, reject) => {
    const req = (plain ? plainRequest : request)(requestOptions, (response) => {
      const status = response.statusCode ?? 0;
      if (REDIRECTS.has(status) && response.headers.location && options.followRedirects !== false) {
        response.destroy();
        resolve({ response });
        return;
      }
      const declared = Number(response.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        response.destroy();
        reject(fail('fetch_too_large', `the body is larger than ${maxBytes} bytes`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          response.destroy();
          reject(fail('fetch_too_large', `the body is larger than ${maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => resolve({ response, body: Buffer.concat(chunks) }));
      response.on('error', (error) => reject(networkError(error, signal)));
      response.on('close', () => {
        if (!response.complete) reject(networkError(new Error('the connection closed early'), signal));
      });
    });
    req.on('error', (error) => reject(networkError(error, signal)));
    req.end(options.body);
  });
}

function networkError(error: Error, signal: AbortSignal): KeyplaneError {
  if (signal.aborted) return timeoutError();
  const code = (error as NodeJS.ErrnoException).code;
  return fail('fetch_failed', `the target could not be fetched${code ? ` (${code})` : ''}`, { cause: error });
}

/**
 * Fetches a URL a user gave, the one way the control plane does (GET, or a POST of a form body
 * that is never redirected). Refuses anything
 * but https, URLs with credentials, and hosts whose resolved addresses are not public; pins the
 * connection to the checked address; follows at most `maxRedirects` redirects by hand, checking
 * each target the same way and refusing loops; caps the body at `maxBytes` and the whole fetch
 * at `timeoutMs`. Sends no cookies and no credentials. Every failure is a `fetch_*` refusal.
 */
export function fetchGuarded(input: string | URL, options: GuardedFetchOptions = {}): Promise<FetchedResponse> {
  return options.tracer ? fetchTraced(options.tracer, input, options) : fetchUntraced(input, options);
}

/**
 * A fetch as a client span: method, the target's host and port, the final status and the refusal
 * reason. Never the path or query (a user's URL may carry a token in either), never a header; and
 * no `traceparent` is sent, since the target is whoever a user named, not a service of ours.
 */
function fetchTraced(tracer: Tracer, input: string | URL, options: GuardedFetchOptions): Promise<FetchedResponse> {
  const method = options.method ?? 'GET';
  let target: URL | undefined;
  try {
    target = new URL(input);
  } catch {
    // fetchUntraced refuses it with its reason; the span says only that it failed.
  }
  return tracer.startActiveSpan(
    method,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: method,
        ...(target
          ? {
              [ATTR_URL_SCHEME]: target.protocol.replace(':', ''),
              [ATTR_SERVER_ADDRESS]: hostOf(target),
              [ATTR_SERVER_PORT]: Number(target.port || (target.protocol === 'http:' ? 80 : 443)),
            }
          : {}),
      },
    },
    async (span) => {
      try {
        const response = await fetchUntraced(input, options);
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, response.status);
        if (response.status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
        return response;
      } catch (error) {
        span.setAttribute(ATTR_ERROR_TYPE, isKeyplaneError(error) ? error.reason : 'error');
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

async function fetchUntraced(input: string | URL, options: GuardedFetchOptions): Promise<FetchedResponse> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs ?? FETCH_DEFAULTS.timeoutMs);
  const outer = options.signal;
  const onOuterAbort = () => deadline.abort();
  if (outer?.aborted) deadline.abort();
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  const ca = trustedCa(options);
  const maxRedirects = options.maxRedirects ?? FETCH_DEFAULTS.maxRedirects;
  const redirects: FetchHop[] = [];
  const seen = new Set<string>();
  try {
    let url = parseTarget(input, options.allowHttp);
    for (;;) {
      url.hash = '';
      seen.add(url.href);
      const pinned = await resolveChecked(url, options, deadline.signal);
      // The destination's Authorization value goes to the URL it was given for, never past a redirect.
      const { destinationAuthorization: _own, ...onward } = options;
      const hopOptions = redirects.length === 0 ? options : onward;
      const { response, body } = await requestOnce(url, pinned, ca, hopOptions, deadline.signal);
      const hop = { url: url.href, status: response.statusCode ?? 0, headers: response.headers };
      if (body) return { ...hop, address: pinned.address, body, redirects };
      redirects.push(hop);
      // A body is never sent on to wherever a redirect points.
      if (options.body !== undefined) throw fail('fetch_failed', 'the target answered a POST with a redirect');
      if (redirects.length > maxRedirects)
        throw fail('fetch_too_many_redirects', `more than ${maxRedirects} redirects`);
      let next: URL;
      try {
        next = new URL(response.headers.location!, url);
      } catch {
        throw fail('fetch_failed', 'a redirect names no valid URL');
      }
      url = parseTarget(next, options.allowHttp);
      url.hash = '';
      if (seen.has(url.href)) throw fail('fetch_too_many_redirects', 'the redirects loop');
    }
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

/** A fetcher with its options bound once (from configuration), per-call options on top. */
export interface GuardedFetcher {
  fetch(url: string | URL, options?: GuardedFetchOptions): Promise<FetchedResponse>;
  check(url: string | URL, options?: GuardedFetchOptions): Promise<CheckedTarget>;
}

/** Binds options (the configured `allowPrivateTargets` and CA file) to a fetcher; the CA file is read once, now. */
export function createGuardedFetcher(defaults: GuardedFetchOptions = {}): GuardedFetcher {
  const { caFile, ...rest } = defaults;
  const bound: GuardedFetchOptions = { ...rest, ...(caFile && !rest.ca ? { ca: readFileSync(caFile) } : {}) };
  return {
    fetch: (url, options = {}) => fetchGuarded(url, { ...bound, ...options }),
    check: (url, options = {}) => checkFetchTarget(url, { ...bound, ...options }),
  };
}
