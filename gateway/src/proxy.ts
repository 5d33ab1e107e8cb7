import type { Reason } from '#lib/errors/reasons.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import httpProxy from 'http-proxy';
import { Pool, type Dispatcher } from 'undici';
import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import { sendEnvelope } from './respond.js';

/**
 * The proxy hop. HTTP goes through an undici Pool with keep-alive (docs/gateway.md#decisions: about 1.6× the
 * throughput of http-proxy here), streaming both ways; a dispatch handler writes each upstream
 * chunk straight into the client response as it comes, so SSE passes unbuffered. WebSocket
 * upgrades go through http-proxy, which handles the 101 handshake and the socket splice.
 */

/** RFC 9110 §7.6.1 hop-by-hop fields, plus the de-facto Proxy-* and Keep-Alive. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'http2-settings',
]);

/**
 * A copy of `headers` without the hop-by-hop ones, including every header the `Connection` field
 * names. Take it from the client's headers BEFORE the gateway adds its own, so a client can never
 * name a gateway-set header in `Connection` to have it removed (CVE-2021-32813). A copy rather
 * than deletes: an object that loses a property turns into a slow dictionary for the rest of the
 * request. Names are lowercase, as node (`req.headers`) and undici (response headers) give them.
 */
export function endToEnd<T>(headers: Record<string, T>): Record<string, T> {
  const connection = headers['connection'];
  const named =
    connection === undefined
      ? []
      : [connection]
          .flat()
          .join(',')
          .split(',')
          .map((token) => String(token).trim().toLowerCase());
  const out: Record<string, T> = {};
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || name.startsWith('proxy-') || (named.length > 0 && named.includes(name))) continue;
    out[name] = headers[name]!;
  }
  return out;
}

/** Whether the request carries a body; read it before hop-by-hop headers (Transfer-Encoding) are dropped. */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/** Maps an upstream failure to its envelope: refused or reset 502, timeouts 504, a closing pool 503. */
export function upstreamFailure(error: unknown): KeyplaneError {
  const code = (error as { code?: string }).code ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT')
    return fail('upstream_timeout', 'the upstream did not answer in time');
  if (code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED') return fail('upstream_busy', 'the gateway is closing');
  return fail('upstream_unavailable', 'the upstream cannot be reached');
}

export interface UpstreamProxyOptions {
  upstream: string;
  connections: number;
  headersTimeoutMs: number;
  onHeaders?: (elapsedMs: number) => void;
}

export interface ForwardInput {
  req: IncomingMessage;
  res: ServerResponse;
  /** Path and query exactly as the policy saw them. */
  target: string;
  /**
   * Final request headers: hop-by-hop already dropped, and neither Host (undici sets it from the
   * pool's origin) nor Expect (which undici refuses; node answered 100-continue already).
   */
  headers: Record<string, string | string[]>;
  /** From hasBody(), taken before the hop-by-hop headers went; or the body already read (an MCP tool call). */
  body: boolean | Buffer;
}

export type ForwardOutcome = { ok: true } | { ok: false; failed: Reason };

/**
 * One forwarded response, written into the client's as undici reads it: the head once the
 * upstream's is in, each chunk as it arrives (pausing the upstream while the client is slow), the
 * end with the upstream's. A client that goes away aborts the upstream request. Leaner than
 * `pool.stream`, whose async resource and `finished()` listeners cost more per request than the
 * rest of the hop (docs/performance.md).
 */
class ForwardHandler implements Dispatcher.DispatchHandler {
  readonly #res: ServerResponse;
  readonly #resolve: (outcome: ForwardOutcome) => void;
  readonly #onHeaders: ((elapsedMs: number) => void) | undefined;
  readonly #started = performance.now();
  #controller: Dispatcher.DispatchController | null = null;
  #done = false;

  constructor(
    res: ServerResponse,
    resolve: (outcome: ForwardOutcome) => void,
    onHeaders: ((elapsedMs: number) => void) | undefined,
  ) {
    this.#res = res;
    this.#resolve = resolve;
    this.#onHeaders = onHeaders;
    res.once('close', () => {
      if (this.#done) return;
      // The client left (an event stream's usual end): the upstream request ends with it, and
      // the request counts as let through, not as an upstream failure.
      this.#done = true;
      this.#controller?.abort(new Error('the client closed the connection'));
      resolve({ ok: true });
    });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#res.destroyed) controller.abort(new Error('the client closed the connection'));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    upstreamHeaders: Record<string, string | string[] | undefined>,
  ): void {
    // 1xx informational answers are not relayed (node answered the client's 100-continue already).
    if (statusCode < 200) return;
    const res = this.#res;
    this.#onHeaders?.(performance.now() - this.#started);
    const out = endToEnd(upstreamHeaders as Record<string, string | string[]>);
    // Cookies the gateway set before forwarding (a refreshed session) go out beside the app's:
    // writeHead would otherwise replace them with the upstream's Set-Cookie.
    const own = res.getHeader('set-cookie');
    if (own !== undefined) out['set-cookie'] = [...[own].flat().map(String), ...[out['set-cookie'] ?? []].flat()];
    res.writeHead(statusCode, out);
    // An event stream may not write its first byte for a while: its head goes out at once.
    // Everything else sends its head with the first body bytes, in one write.
    const type = out['content-type'];
    if (typeof type === 'string' && type.startsWith('text/event-stream')) res.flushHeaders();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#res.write(chunk)) return;
    controller.pause();
    this.#res.once('drain', () => controller.resume());
  }

  onResponseEnd(): void {
    this.#done = true;
    this.#res.end();
    this.#resolve({ ok: true });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.#done) return;
    this.#done = true;
    const res = this.#res;
    const failure = upstreamFailure(error);
    if (!res.headersSent && !res.destroyed) {
      sendEnvelope(res, failure);
    } else if (!res.destroyed) {
      res.destroy();
    }
    this.#resolve({ ok: false, failed: failure.reason });
  }
}

export class UpstreamProxy {
  readonly #pool: Pool;
  readonly #ws: httpProxy;
  readonly #options: UpstreamProxyOptions;
  #closing: Promise<void> | undefined;

  constructor(options: UpstreamProxyOptions) {
    this.#options = options;
    this.#pool = new Pool(options.upstream, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 4_000,
      headersTimeout: options.headersTimeoutMs,
      // Streams (SSE) may stay quiet for long: no idle limit between body chunks.
      bodyTimeout: 0,
    });
    this.#ws = httpProxy.createProxyServer({ target: options.upstream, ws: true, xfwd: false, changeOrigin: true });
    this.#ws.on('error', (_error, _req, socket) => {
      const duplex = socket as unknown as Duplex;
      if (duplex && !duplex.destroyed)
        duplex.end(
          'HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"ok":false,"reason":"upstream_unavailable"}',
        );
    });
  }

  /**
   * Forwards one request; resolves when the response has been written (or failed and answered)
   * with what happened: the upstream answered, or the reason it failed.
   */
  forward(input: ForwardInput): Promise<ForwardOutcome> {
    return new Promise((resolve) => {
      const handler = new ForwardHandler(input.res, resolve, this.#options.onHeaders);
      this.#pool.dispatch(
        {
          path: input.target,
          method: input.req.method as 'GET',
          headers: input.headers,
          body: Buffer.isBuffer(input.body) ? input.body : input.body ? input.req : null,
        },
        handler,
      );
    });
  }

  /** Splices a WebSocket (or other upgrade) to the upstream; headers are already final. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#ws.ws(req, socket, head);
  }

  /** Lets in-flight requests finish; calling it again waits for the same close (undici refuses a second one). */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#ws.close();
      await this.#pool.close();
    })();
    return this.#closing;
  }

  /** Ends in-flight upstream work at once (after the drain window). */
  async destroy(): Promise<void> {
    await this.#pool.destroy();
  }
}
