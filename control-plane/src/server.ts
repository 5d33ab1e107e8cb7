import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import type { ControlPlaneConfig } from '#config/types.js';
import { defaultPublicUrl, listen } from '#lib/runtime/listen.js';
import { lingerOnClose } from '#lib/runtime/linger-close.js';
import { logDestination } from '#lib/runtime/log-destination.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import { createControlPlaneTlsServer, reloadTls, tlsFilesOf } from '#lib/runtime/tls-server.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { buildControlPlane } from './app.js';
import { sendRawFailure } from './plugins/errors.js';
import { openControlPlaneServices, type RunningServices } from './services.js';
import { issueSetupLink } from './accounts/founder.js';

export interface RunningControlPlane {
  url: string;
  app: FastifyInstance;
  services: RunningServices;
  /** Present with `tls`: reads the certificate and key again for new connections (SIGHUP). */
  reloadTls?: () => void;
  close(): Promise<void>;
}

/** Binds first (so `--port 0` knows its port before the issuer is fixed), then builds the app on that socket. */
export interface StartHooks {
  warn?: (message: string) => void;
  notify?: (line: string) => void;
  logStream?: NodeJS.WritableStream;
  /** A worker under `--workers N`: the primary's shared state (when not Redis), and no background work. */
  state?: SharedState;
  background?: boolean;
}

export async function startControlPlane(
  config: ControlPlaneConfig,
  hooks: StartHooks = {},
): Promise<RunningControlPlane> {
  const tls = tlsFilesOf(config.tls);
  const server = (tls ? createControlPlaneTlsServer(tls) : createServer()) as Server;
  // The socket is open before the app is ready, and a peer may call at once (a control plane
  // restarted on its port, its gateways retrying): fastify must not route a request before its
  // hooks are built (a TypeError in its preParsing runner), so early requests wait for `ready()`.
  let handle: ((request: IncomingMessage, response: ServerResponse) => void) | undefined;
  const early: Array<[IncomingMessage, ServerResponse]> = [];
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    // A 413 (or any closing answer) sent before the body arrived is read by the client, not reset.
    // (HTTP/2 streams end on their own; their socket is the session's.)
    if (request.httpVersionMajor !== 2) lingerOnClose(request);
    if (handle) handle(request, response);
    else early.push([request, response]);
  });
  const port = await listen(server, config.port, config.host);
  const issuer = config.issuer ?? defaultPublicUrl(config.host, port, tls !== null);
  let services: RunningServices | undefined;
  let ready: typeof handle;
  try {
    services = await openControlPlaneServices(
      { ...config, issuer },
      {
        ...(hooks.warn ? { warn: hooks.warn } : {}),
        ...(hooks.notify ? { notify: hooks.notify } : {}),
        ...(hooks.state ? { state: hooks.state } : {}),
        ...(hooks.background === undefined ? {} : { background: hooks.background }),
      },
    );
    const app = await buildControlPlane(services, {
      logStream: hooks.logStream ?? logDestination(),
      serverFactory: (handler) => {
        ready = handler;
        return server as Server;
      },
    });
    await app.ready();
    handle = ready;
    for (const [request, response] of early.splice(0)) handle?.(request, response);
    const opened = services;
    let closing: Promise<void> | undefined;
    return {
      url: issuer,
      app,
      services: opened,
      ...(tls ? { reloadTls: () => reloadTls(server as unknown as TlsServer, tls) } : {}),
      close: () =>
        (closing ??= (async () => {
          await app.close();
          await closeServer(server);
          await opened.close();
        })()),
    };
  } catch (error) {
    // Requests held for `ready()` get their answer: the server is not coming up.
    for (const [, response] of early.splice(0)) {
      response.shouldKeepAlive = false;
      sendRawFailure(response, fail('not_ready', 'the control plane could not start'));
    }
    await closeServer(server);
    await services?.close();
    throw error;
  }
}

/**
 * The primary under `--workers N` (docs/scaling.md#workers): the instance's services with its
 * background work (migrations, sealer, logout delivery, key schedule) and its one-per-start
 * announcement, the founder's setup link; it serves no requests. `config.port` is the one the
 * workers listen on, so the issuer is theirs.
 */
export async function startControlPlanePrimary(
  config: ControlPlaneConfig,
  hooks: Pick<StartHooks, 'warn' | 'notify' | 'state'> = {},
): Promise<RunningServices> {
  const issuer = config.issuer ?? defaultPublicUrl(config.host, config.port, tlsFilesOf(config.tls) !== null);
  const services = await openControlPlaneServices({ ...config, issuer }, hooks);
  try {
    await issueSetupLink(services, { warn: () => undefined });
  } catch (error) {
    await services.close();
    throw error;
  }
  return services;
}

function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  server.closeIdleConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
