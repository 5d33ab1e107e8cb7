import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { ControlPlaneConfig } from '#config/types.js';
import { defaultPublicUrl, listen } from '#lib/runtime/listen.js';
import { logDestination } from '#lib/runtime/log-destination.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { buildControlPlane } from './app.js';
import { sendRawFailure } from './plugins/errors.js';
import { openControlPlaneServices, type RunningServices } from './services.js';

export interface RunningControlPlane {
  url: string;
  app: FastifyInstance;
  services: RunningServices;
  close(): Promise<void>;
}

/** Binds first (so `--port 0` knows its port before the issuer is fixed), then builds the app on that socket. */
export interface StartHooks {
  warn?: (message: string) => void;
  notify?: (line: string) => void;
  logStream?: NodeJS.WritableStream;
}

export async function startControlPlane(
  config: ControlPlaneConfig,
  hooks: StartHooks = {},
): Promise<RunningControlPlane> {
  const server = createServer();
  // The socket is open before the app is ready, and a peer may call at once (a control plane
  // restarted on its port, its gateways retrying): fastify must not route a request before its
  // hooks are built (a TypeError in its preParsing runner), so early requests wait for `ready()`.
  let handle: ((request: IncomingMessage, response: ServerResponse) => void) | undefined;
  const early: Array<[IncomingMessage, ServerResponse]> = [];
  server.on('request', (request: IncomingMessage, response: ServerResponse) =>
    handle ? handle(request, response) : early.push([request, response]),
  );
  const port = await listen(server, config.port, config.host);
  const issuer = config.issuer ?? defaultPublicUrl(config.host, port);
  let services: RunningServices | undefined;
  let ready: typeof handle;
  try {
    services = await openControlPlaneServices(
      { ...config, issuer },
      {
        ...(hooks.warn ? { warn: hooks.warn } : {}),
        ...(hooks.notify ? { notify: hooks.notify } : {}),
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

function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  server.closeIdleConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
