import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { findFreePort } from '#lib/runtime/listen.js';
import { parseRedisAddress } from '#lib/runtime/shared-state/index.js';
import { RedisSharedState } from '#lib/runtime/shared-state/redis.js';
import { runOwn, spawnOwn, until, type OwnProcess } from './own-process.js';
import { peerAvailability, type Availability } from './peers.js';

/**
 * Redis servers, Sentinels and Clusters a fault test starts, stops and starts again itself, on
 * free loopback ports in a directory of its own: never the shared 127.0.0.1:6379. Sentinels run
 * as `redis-server <conf> --sentinel`, which is what Debian's `redis-sentinel` runs.
 */

export function ownRedisAvailability(): Availability {
  return peerAvailability('redis-server', ['--version'], 'redis-server');
}

export interface OwnRedis {
  readonly port: number;
  readonly url: string;
  /** One command on a short-lived connection (`INFO replication`, `SENTINEL …`, `CLUSTER …`). */
  command(...args: Array<string | number>): Promise<unknown>;
  /** SIGKILL (a crash) by default; resolves once the process exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port, directory and arguments; resolves once it answers PING. */
  start(): Promise<void>;
  readonly running: boolean;
}

/** One command to `port` on a short-lived connection that never retries. */
export async function redisCommand(port: number, ...args: Array<string | number>): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(String(args[0]), ...args.slice(1).map(String));
  } finally {
    client.disconnect();
  }
}

/**
 * A redis-server (or, with `sentinel`, a Sentinel whose config file is `sentinelConf`) on a
 * free port, in `dir`. `args` are extra `--name value` settings (`--replicaof`, `--appendonly`),
 * or a function that gives them afresh for each try (a cluster node's free bus port). A free
 * port can be taken by another test process before redis-server binds it: a first start that
 * exits is tried again on other ports, twice.
 */
export async function startOwnRedis(
  dir: string,
  options: {
    args?: string[] | (() => Promise<string[]>);
    sentinelConf?: (port: number) => string;
    port?: number;
  } = {},
): Promise<OwnRedis> {
  mkdirSync(dir, { recursive: true });
  let port = 0;
  let args: string[] = [];
  let server: OwnProcess | undefined;
  const start = async () => {
    server = spawnOwn('redis-server', args, { cwd: dir });
    const started = server;
    await until(
      `redis-server on ${port} answers PING`,
      async () => {
        if (!started.running) throw new ServerExited(`redis-server exited: ${started.output()}`);
        return (await redisCommand(port, 'PING')) === 'PONG' ? true : undefined;
      },
      15_000,
      (error) => error instanceof ServerExited,
    );
  };
  for (let attempt = 1; ; attempt++) {
    port = options.port ?? (await findFreePort());
    args = await argumentsFor(dir, port, options);
    try {
      await start();
      break;
    } catch (error) {
      if (!(error instanceof ServerExited) || options.port !== undefined || attempt === 3) throw error;
    }
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    command: (...command) => redisCommand(port, ...command),
    stop: async (signal = 'SIGKILL') => server?.stop(signal),
    start,
    get running() {
      return server?.running ?? false;
    },
  };
}

class ServerExited extends Error {}

async function argumentsFor(
  dir: string,
  port: number,
  options: { args?: string[] | (() => Promise<string[]>); sentinelConf?: (port: number) => string },
): Promise<string[]> {
  if (options.sentinelConf) {
    const conf = join(dir, 'sentinel.conf');
    // Sentinel rewrites its config file as it learns the topology, so it must be writable.
    writeFileSync(conf, options.sentinelConf(port));
    return [conf, '--sentinel', '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--protected-mode', 'no'];
  }
  const extra = typeof options.args === 'function' ? await options.args() : (options.args ?? []);
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--protected-mode',
    'no',
    ...extra,
  ];
}

/** `INFO replication` as a map of its fields. */
export async function replicationInfo(redis: Pick<OwnRedis, 'command'>): Promise<Record<string, string>> {
  const text = String(await redis.command('INFO', 'replication'));
  return Object.fromEntries(
    text
      .split(/\r?\n/)
      .filter((line) => line.includes(':'))
      .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]),
  );
}

export interface OwnSentinelSet {
  masterName: string;
  /** Every data node, the first the master at the start. */
  nodes: OwnRedis[];
  sentinels: OwnRedis[];
  /** `host:port` of each Sentinel, as `redis.sentinels` takes them. */
  addresses: string[];
  /** The port of the master the Sentinels name now. */
  masterPort(): Promise<number>;
  /** The node the Sentinels name master now. */
  master(): Promise<OwnRedis>;
  close(): Promise<void>;
}

/**
 * A master, `replicas` replicas and three Sentinels (quorum 2) that declare the master down
 * after `downAfterMs` (two seconds, for the failover tests). Resolves once every replica's link
 * is up and every Sentinel knows the replicas and the other Sentinels, so a failover can be
 * elected at once. A set that must not fail over (a conformance run) passes a long
 * `downAfterMs`: on a loaded CI machine a starved master missed two seconds of PINGs and was
 * replaced mid-test.
 */
export async function startSentinelSet(
  dir: string,
  options: { replicas?: number; masterName?: string; downAfterMs?: number } = {},
): Promise<OwnSentinelSet> {
  const { replicas = 2, masterName = 'kpmaster', downAfterMs = 2000 } = options;
  const started: OwnRedis[] = [];
  const close = async () => {
    await Promise.all(started.map((redis) => redis.stop()));
  };
  try {
    const master = await startOwnRedis(join(dir, 'node-0'));
    started.push(master);
    const nodes = [master];
    for (let i = 1; i <= replicas; i++) {
      const replica = await startOwnRedis(join(dir, `node-${i}`), {
        args: ['--replicaof', '127.0.0.1', String(master.port)],
      });
      started.push(replica);
      nodes.push(replica);
    }
    const sentinels: OwnRedis[] = [];
    for (let i = 0; i < 3; i++) {
      const sentinel = await startOwnRedis(join(dir, `sentinel-${i}`), {
        sentinelConf: () =>
          [
            `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 2`,
            `sentinel down-after-milliseconds ${masterName} ${downAfterMs}`,
            `sentinel failover-timeout ${masterName} 10000`,
            `sentinel parallel-syncs ${masterName} ${replicas}`,
            '',
          ].join('\n'),
      });
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    // Generous waits, as for a cluster below: a loaded CI machine is slow to sync and to gossip.
    for (const replica of nodes.slice(1))
      await until(
        'replica link up',
        async () => ((await replicationInfo(replica))['master_link_status'] === 'up' ? true : undefined),
        120_000,
      );
    for (const sentinel of sentinels)
      await until(
        'the Sentinels know the replicas and each other',
        async () => {
          const known = (await sentinel.command('SENTINEL', 'REPLICAS', masterName)) as unknown[];
          const others = (await sentinel.command('SENTINEL', 'SENTINELS', masterName)) as unknown[];
          return known.length === replicas && others.length === 2 ? true : undefined;
        },
        120_000,
      );
    const masterPort = async () => {
      const [, port] = (await sentinels[0]!.command('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName)) as string[];
      return Number(port);
    };
    return {
      masterName,
      nodes,
      sentinels,
      addresses: sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`),
      masterPort,
      master: async () => {
        const port = await masterPort();
        return nodes.find((node) => node.port === port)!;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

export interface OwnCluster {
  nodes: OwnRedis[];
  /** `host:port` of each node, as `redis.clusterNodes` takes them. */
  addresses: string[];
  close(): Promise<void>;
}

/**
 * A Redis Cluster of `masters` masters with `replicasPerMaster` replicas each, created with
 * `redis-cli --cluster create`. The cluster bus port of each node is set explicitly (a free
 * port), rather than the default port + 10000, which may be taken.
 */
export async function startCluster(dir: string, masters = 3, replicasPerMaster = 1): Promise<OwnCluster> {
  const started: OwnRedis[] = [];
  const close = async () => {
    await Promise.all(started.map((redis) => redis.stop()));
  };
  try {
    for (let i = 0; i < masters * (1 + replicasPerMaster); i++)
      started.push(
        await startOwnRedis(join(dir, `cluster-${i}`), {
          args: async () => [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-port',
            String(await findFreePort()),
            '--cluster-node-timeout',
            '2000',
            '--appendonly',
            'no',
          ],
        }),
      );
    const addresses = started.map((node) => `127.0.0.1:${node.port}`);
    runOwn('redis-cli', [
      '--cluster',
      'create',
      ...addresses,
      '--cluster-replicas',
      String(replicasPerMaster),
      '--cluster-yes',
    ]);
    // Six nodes agreeing by gossip and three replicas' first syncs took over 30 s on a loaded CI
    // machine (the Node.js 24 pass of a clean-clone run): two minutes, as a cluster that forms at all does.
    for (const node of started)
      await until(
        'every node sees the cluster ok, and every replica its master',
        async () => {
          if (!String(await node.command('CLUSTER', 'INFO')).includes('cluster_state:ok')) return undefined;
          const info = await replicationInfo(node);
          return info['role'] === 'master' || info['master_link_status'] === 'up' ? true : undefined;
        },
        120_000,
      );
    return { nodes: started, addresses, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Shared state on a Sentinel set or a Cluster as the fault tests use it: every one-time write
 * confirmed by one replica, budgets a little wider than the defaults for a loaded machine.
 */
export function openHaState(
  on: OwnSentinelSet | OwnCluster,
  prefix: string,
  commandTimeoutMs = 4000, // a first command, through Sentinel and WAIT, can take over 1.5 s on a loaded CI machine
): Promise<RedisSharedState> {
  const nodes = on.addresses.map(parseRedisAddress);
  return new RedisSharedState(
    'masterName' in on ? { sentinels: nodes, masterName: on.masterName } : { cluster: nodes },
    {
      prefix,
      waitReplicas: 1,
      // A replica on a loaded CI machine took over 300 ms to confirm (the Node.js 24 pass of a clean-clone run).
      waitTimeoutMs: 2000,
      commandTimeoutMs,
    },
  ).connect();
}
