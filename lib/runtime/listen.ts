import type { AddressInfo, Server } from 'node:net';
import { connect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;
const POLL_MS = 50;

/** Binds `server` and resolves with the port it got (so `--port 0` knows its port before the public URL is fixed). */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/**
 * A port the OS reports free on `host` now, for a server that must know its port before it binds
 * (a redirect URI registered first, a peer process given its port in a config file). Another
 * process may take it in between; that is the accepted cost of knowing it early.
 */
export async function findFreePort(host = '127.0.0.1'): Promise<number> {
  const probe = createServer();
  const port = await listen(probe, 0, host);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Resolves once something accepts TCP connections on `host:port`; rejects after `timeoutMs` (for a process started elsewhere). */
export async function waitForPort(port: number, host: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new Error(`nothing accepted connections on ${host}:${port} within ${timeoutMs} ms`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, host);
      socket.setTimeout(remaining, () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(POLL_MS);
  }
}

/** The public URL when none is configured: browsers refuse IP addresses as WebAuthn RP IDs, so loopback becomes localhost. */
export function defaultPublicUrl(host: string, port: number, secure = false): string {
  const scheme = secure ? 'https' : 'http';
  if (LOOPBACK.test(host)) return `${scheme}://localhost:${port}`;
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
