import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer, type ServerOptions } from 'node:https';
import { createSecureServer, type Http2SecureServer, type Http2ServerRequest, type Http2Session } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Server as TlsServer, TLSSocket } from 'node:tls';

/** The PEM files of `--tls-cert`/`--tls-key` (config `tls`, docs/operations.md#tls). */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
}

/** The `tls` config group when both files are set, else null (plain HTTP). */
export function tlsFilesOf(tls: {
  readonly cert?: string | undefined;
  readonly key?: string | undefined;
}): TlsFiles | null {
  return tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : null;
}

function readTls(files: TlsFiles): { cert: Buffer; key: Buffer } {
  return { cert: readFileSync(files.cert), key: readFileSync(files.key) };
}

/**
 * Reads the files again and installs them for the connections that come next (SIGHUP): open
 * connections keep the certificate they were made with, so none is dropped. A file that cannot
 * be read or a key that does not fit leaves the current certificate in place and throws.
 */
export function reloadTls(server: TlsServer, files: TlsFiles): void {
  server.setSecureContext(readTls(files));
}

/**
 * The control plane's HTTPS server: HTTP/2 and HTTP/1.1 chosen by ALPN (RFC 7540 §3.3), one
 * request handler for both (the HTTP/2 compatibility API). It also answers
 * `closeIdleConnections()` as node:http's server does, which fastify calls when it closes:
 * HTTP/2 sessions get GOAWAY and finish their streams; HTTP/1.1 connections close once idle.
 */
export function createControlPlaneTlsServer(files: TlsFiles): Http2SecureServer & { closeIdleConnections(): void } {
  const server = createSecureServer({ ...readTls(files), allowHTTP1: true }) as Http2SecureServer & {
    closeIdleConnections(): void;
  };
  const sessions = new Set<Http2Session>();
  const http1 = new Map<Socket, number>();
  let closing = false;
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    if (closing) session.close();
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') return;
    http1.set(socket, 0);
    socket.once('close', () => http1.delete(socket));
  });
  // Counts the HTTP/1.1 requests in flight per connection, so that closing ends only idle ones.
  server.prependListener('request', (request: IncomingMessage | Http2ServerRequest, response: ServerResponse) => {
    if (request.httpVersionMajor === 2) return;
    const socket = request.socket;
    http1.set(socket, (http1.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (http1.get(socket) ?? 1) - 1;
      if (!http1.has(socket)) return;
      http1.set(socket, left);
      if (closing && left === 0) socket.end();
    });
  });
  server.closeIdleConnections = () => {
    closing = true;
    for (const session of sessions) session.close();
    for (const [socket, inFlight] of http1) if (inFlight === 0) socket.end();
  };
  return server;
}

/** The gateway's HTTPS server: HTTP/1.1 only (ALPN offers nothing else; HTTP/2 there reopens the smuggling analysis). */
export function createGatewayTlsServer(files: TlsFiles, options: ServerOptions = {}): HttpsServer {
  return createHttpsServer({ ...options, ...readTls(files), ALPNProtocols: ['http/1.1'] });
}
