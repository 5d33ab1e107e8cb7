import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GatewayConfig } from '../../config/types.js';
import { openSharedState } from '../../lib/runtime/shared-state/index.js';
import { buildGateway, type Gateway, type GatewayDeps } from './app.js';

export interface RunningGateway {
  url: string;
  gateway: Gateway;
  server: Server;
  close(): Promise<void>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;
/** How long SIGTERM waits for in-flight requests and streams before cutting them. */
const DRAIN_MS = 10_000;

/** The public URL when none is configured: loopback becomes localhost, as for the control plane (CONTRACT). */
export function defaultGatewayUrl(host: string, port: number): string {
  if (LOOPBACK.test(host)) return `http://localhost:${port}`;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Binds first (so `--port 0` knows its port before the public URL is fixed), then builds the
 * gateway on that socket and restores the last good signed config from the data dir. Prints
 * nothing: the CLI prints `listening <url>`.
 */
export async function startGateway(config: GatewayConfig, deps: GatewayDeps = {}): Promise<RunningGateway> {
  const server = createServer({ requestTimeout: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = (config.publicUrl ?? defaultGatewayUrl(config.host, port)).replace(/\/$/, '');
  // Shared state given by the caller (tests, `keyplane up`) stays the caller's to close.
  const ownsState = !deps.state;
  let state: Awaited<ReturnType<typeof openSharedState>> | undefined = deps.state;
  try {
    state ??= await openSharedState(config.redisUrl, 'kp:gate:');
    const gateway = await buildGateway({ ...config, publicUrl: url }, { ...deps, state });
    await gateway.configHolder.restore(Date.now());
    server.on('request', gateway.handleRequest);
    server.on('upgrade', gateway.handleUpgrade);
    const opened = state;
    let closing: Promise<void> | undefined;
    return {
      url,
      gateway,
      server,
      close: () => (closing ??= (async () => {
        await drain(server);
        await gateway.close();
        if (ownsState) await opened.close();
      })()),
    };
  } catch (error) {
    await drain(server);
    if (ownsState) await state?.close();
    throw error;
  }
}

/** Stops accepting, lets in-flight requests finish, and cuts what is still open after DRAIN_MS (SSE, WebSockets). */
function drain(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
