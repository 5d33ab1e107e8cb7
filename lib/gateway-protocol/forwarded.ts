import { normalizeHeaderName } from './identity-headers.js';

/**
 * X-Forwarded-* as the gateway sees it: believed only from configured proxy addresses
 * (oauth2-proxy GHSA-7x63-xv5r-3p2x shows what trusting them from anyone costs), rebuilt from the connection otherwise.
 */

/** Forwarding and original-request headers a client could use to lie about where or what it asked. */
const FORWARDING = new Set([
  'forwarded',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'x-original-uri',
  'x-original-url',
  'x-original-method',
  'x-rewrite-url',
  'client-ip',
]);

export function isForwardingHeaderName(name: string): boolean {
  const normalized = normalizeHeaderName(name);
  return normalized.startsWith('x-forwarded-') || FORWARDING.has(normalized);
}

export interface ClientView {
  /** The client's address: the connection's, or the last hop a trusted proxy reports. */
  clientIp: string;
  proto: 'http' | 'https';
  host: string;
  /** The X-Forwarded-For value to send on. */
  forwardedFor: string;
  /** Original method and URI a trusted proxy reported for forward auth. */
  originalMethod?: string;
  originalUri?: string;
  trusted: boolean;
}

function first(value: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const head = raw.split(',')[0]?.trim();
  return head ? head : undefined;
}

let lastOrigin: { publicUrl: string; protocol: string; host: string } | undefined;

/** The public URL's scheme and host; a process serves one public URL, so its parse is kept. */
function ownOrigin(publicUrl: string): { protocol: string; host: string } {
  if (lastOrigin?.publicUrl !== publicUrl) {
    const { protocol, host } = new URL(publicUrl);
    lastOrigin = { publicUrl, protocol, host };
  }
  return lastOrigin;
}

/**
 * Reads the client's view and rewrites `headers` (node's lower-cased object, in place): from an
 * untrusted peer every forwarding header in every spelling is dropped; from a trusted one only
 * the non-canonical spellings are. Then X-Forwarded-For/-Proto/-Host are set: host and proto
 * from a trusted proxy, else from the gateway's public URL, never from the client's `Host`
 * (an app building links or redirects from it would point them at whatever host the client named).
 */
export function applyForwardedHeaders(
  headers: Record<string, string | string[] | undefined>,
  peer: { remoteAddress: string; encrypted: boolean },
  isTrusted: (address: string) => boolean,
  publicUrl: string,
): ClientView {
  const trusted = isTrusted(peer.remoteAddress);
  const own = ownOrigin(publicUrl);
  const view: ClientView = {
    clientIp: peer.remoteAddress,
    proto: own.protocol === 'https:' ? 'https' : 'http',
    host: own.host,
    forwardedFor: peer.remoteAddress,
    trusted,
  };
  if (trusted) {
    const chain = headers['x-forwarded-for'];
    const prior = (Array.isArray(chain) ? chain.join(', ') : chain)?.trim();
    if (prior) {
      view.forwardedFor = `${prior}, ${peer.remoteAddress}`;
      view.clientIp = prior.split(',').at(-1)!.trim() || peer.remoteAddress;
    }
    const proto = first(headers['x-forwarded-proto'])?.toLowerCase();
    if (proto === 'http' || proto === 'https') view.proto = proto;
    const host = first(headers['x-forwarded-host']);
    if (host && /^[A-Za-z0-9.\-:[\]]+$/.test(host)) view.host = host;
    const method = first(headers['x-forwarded-method']) ?? first(headers['x-original-method']);
    if (method && /^[A-Z]{1,16}$/.test(method)) view.originalMethod = method;
    // A URI may hold commas, so it is taken whole rather than split like the lists above.
    const rawUri = headers['x-forwarded-uri'] ?? headers['x-original-uri'] ?? headers['x-original-url'];
    const uri = (Array.isArray(rawUri) ? rawUri[0] : rawUri)?.trim();
    if (uri) view.originalUri = uri;
  }
  for (const name of Object.keys(headers)) {
    if (!isForwardingHeaderName(name)) continue;
    if (!trusted || name !== normalizeHeaderName(name)) delete headers[name];
  }
  headers['x-forwarded-for'] = view.forwardedFor;
  headers['x-forwarded-proto'] = view.proto;
  if (view.host) headers['x-forwarded-host'] = view.host;
  return view;
}
