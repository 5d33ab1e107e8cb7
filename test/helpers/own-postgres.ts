import { appendFileSync, chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { findFreePort } from '#lib/runtime/listen.js';
import { runOwn, spawnOwn, until, type OwnProcess } from './own-process.js';
import type { Availability } from './peers.js';

/**
 * PostgreSQL clusters a fault test owns: made with initdb in its own directory, on a free port,
 * run in the foreground as the `postgres` user (PostgreSQL refuses root), stopped and started
 * again by the test. Never the shared server on 5432.
 */

/** The newest PostgreSQL server binaries installed (Debian keeps them under /usr/lib/postgresql/<major>/bin). */
function binDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const majors = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] ? join(root, majors[0], 'bin') : null;
}

/**
 * Whether the tests can make their own PostgreSQL: initdb and the server binaries present, and,
 * when running as root, a `postgres` user to run them as. Fails under KEYPLANE_REQUIRE_ALL=1.
 */
export function ownPostgresAvailability(): Availability {
  let reason: string | null = null;
  if (!binDir()) reason = 'PostgreSQL server binaries (initdb, postgres) are not installed (Debian: postgresql)';
  else if (process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0)
    reason = 'the tests run as root and there is no postgres user to run PostgreSQL as';
  if (!reason) return { run: true };
  if (process.env['KEYPLANE_REQUIRE_ALL'] === '1') throw new Error(`${reason}, and KEYPLANE_REQUIRE_ALL=1 requires it`);
  return { run: false, reason };
}

const USER = 'postgres';

/** `smart` waits for clients, `fast` rolls them back and disconnects them, `immediate` is a crash (recovery at start). */
export type StopMode = 'smart' | 'fast' | 'immediate';
const SIGNALS: Record<StopMode, NodeJS.Signals> = { smart: 'SIGTERM', fast: 'SIGINT', immediate: 'SIGQUIT' };

export interface OwnPostgres {
  readonly port: number;
  /** The connection URL of `database` (default `postgres`) as user postgres, trust. */
  url(database?: string): string;
  /** Starts the server in the foreground; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it the PostgreSQL way (`pg_ctl stop -m <mode>` sends the same signals); resolves once it exited. */
  stop(mode?: StopMode): Promise<void>;
  /** One statement on a short-lived connection. */
  query<R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, database?: string): Promise<R[]>;
  readonly running: boolean;
}

/** Makes `dir` (a fresh temporary directory) usable by the postgres user when the tests run as root. */
function handOver(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const uid = Number(spawnSync('id', ['-u', USER], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', USER], { encoding: 'utf8' }).stdout.trim());
  chownSync(dir, uid, gid);
}

async function query<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function ownServer(dir: string, data: string, port: number): OwnPostgres {
  const bin = binDir()!;
  let server: OwnProcess | undefined;
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    url,
    async start() {
      server = spawnOwn(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir], { user: USER });
      const started = server;
      await until(
        `PostgreSQL on ${port} accepts connections`,
        async () => {
          if (!started.running) throw new Error(`postgres exited: ${started.output()}`);
          await query(url(), 'SELECT 1');
          return true;
        },
        60_000,
      );
    },
    stop: async (mode = 'fast') => server?.stop(SIGNALS[mode]),
    query: (sql, database) => query(url(database), sql),
    get running() {
      return server?.running ?? false;
    },
  };
}

/**
 * A new cluster in `dir` (a fresh temporary directory), started. Set up to be a primary with
 * streaming replicas (wal_level replica, WAL senders, replication allowed from loopback);
 * `settings` go into postgresql.conf as they are (`synchronous_standby_names = '*'`).
 */
export async function startOwnPostgres(dir: string, settings: string[] = []): Promise<OwnPostgres> {
  handOver(dir);
  const data = join(dir, 'data');
  runOwn(join(binDir()!, 'initdb'), ['-D', data, '-A', 'trust', '-U', USER, '-E', 'UTF8', '--no-sync'], {
    user: USER,
  });
  const port = await findFreePort();
  appendFileSync(
    join(data, 'postgresql.conf'),
    [
      "listen_addresses = '127.0.0.1'",
      // Throwaway data: no fsync, so a test's commits cost no disk flushes.
      'fsync = off',
      'wal_level = replica',
      'max_wal_senders = 5',
      'hot_standby = on',
      ...settings,
      '',
    ].join('\n'),
  );
  const server = ownServer(dir, data, port);
  await server.start();
  return server;
}

/**
 * A streaming replica of `primary` (pg_basebackup -R), in `dir`, started as a hot standby.
 * `SELECT pg_promote()` makes it a primary.
 */
export async function startOwnStandby(dir: string, primary: OwnPostgres): Promise<OwnPostgres> {
  handOver(dir);
  const data = join(dir, 'data');
  mkdirSync(data, { recursive: true, mode: 0o700 });
  handOver(data);
  runOwn(
    join(binDir()!, 'pg_basebackup'),
    ['-h', '127.0.0.1', '-p', String(primary.port), '-U', USER, '-D', data, '-R', '-X', 'stream', '--no-sync'],
    { user: USER },
  );
  // The copy carries the primary's settings: once promoted it has no standby of its own, so it
  // must not wait for a synchronous one, or every commit would hang.
  appendFileSync(join(data, 'postgresql.conf'), "cluster_name = 'standby'\nsynchronous_standby_names = ''\n");
  const server = ownServer(dir, data, await findFreePort());
  await server.start();
  return server;
}
