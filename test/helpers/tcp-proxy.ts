import { connect, createServer, type Socket } from 'node:net';
import { listen } from '#lib/runtime/listen.js';

/**
 * A TCP forwarder standing in for what sits in front of a database in production (a virtual IP,
 * HAProxy, a Kubernetes Service): clients connect to its port, it connects them to the current
 * target. `switchTo` moves it to another target and resets every connection it carried, as a
 * moving VIP or a failover proxy does.
 */
export interface TcpProxy {
  readonly port: number;
  switchTo(targetPort: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let target = targetPort;
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const port = await listen(server, 0, '127.0.0.1');
  return {
    port,
    switchTo(next) {
      target = next;
      for (const [client, upstream] of pairs) {
        client.resetAndDestroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const [client, upstream] of pairs) {
          client.destroy();
          upstream.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
