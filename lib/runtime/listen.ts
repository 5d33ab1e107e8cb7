import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

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

/** The public URL when none is configured: browsers refuse IP addresses as WebAuthn RP IDs, so loopback becomes localhost (CONTRACT). */
export function defaultPublicUrl(host: string, port: number): string {
  if (LOOPBACK.test(host)) return `http://localhost:${port}`;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
