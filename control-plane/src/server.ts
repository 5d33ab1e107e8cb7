import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { ControlPlaneConfig } from '#config/types.js';
import { defaultPublicUrl, listen } from '#lib/runtime/listen.js';
import { logDestination } from '#lib/runtime/log-destination.js';
import { buildControlPlane } from './app.js';
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
  const port = await listen(server, config.port, config.host);
  const issuer = config.issuer ?? defaultPublicUrl(config.host, port);
  let services: RunningServices | undefined;
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
        server.on('request', handler);
        return server as Server;
      },
    });
    await app.ready();
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
