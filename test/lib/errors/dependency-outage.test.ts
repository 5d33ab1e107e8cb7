import t from 'tap';
import pg from 'pg';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import {
  DependencyUnavailableError,
  RETRY_AFTER_SECONDS,
  classifyOutage,
  isDependencyUnavailable,
  toDependencyError,
  unavailableFailure,
} from '#lib/errors/dependency-outage.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { findFreePort } from '#lib/runtime/listen.js';

/** An error shaped as a driver raises it: pg's DatabaseError, ioredis's ReplyError and the like. */
const shaped = (fields: Record<string, unknown>, message = 'x') => Object.assign(new Error(message), fields);

t.test('classifies the real errors of a dependency nobody listens for', async (t) => {
  const port = await findFreePort();
  const pool = new pg.Pool({
    connectionString: `postgres://postgres@127.0.0.1:${port}/x`,
    connectionTimeoutMillis: 2000,
  });
  pool.on('error', () => undefined);
  const pgError = await pool.query('SELECT 1').catch((error: unknown) => error);
  await pool.end();
  t.match(classifyOutage(pgError), { kind: 'refused', detail: 'ECONNREFUSED', notSent: false }, 'pg');

  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 10,
  });
  redis.on('error', () => undefined);
  const redisError = await redis.get('k').catch((error: unknown) => error);
  redis.disconnect();
  t.match(classifyOutage(redisError), { kind: 'unreachable', detail: 'MaxRetriesPerRequestError' }, 'ioredis');

  const undiciError = await request(`http://127.0.0.1:${port}/`).catch((error: unknown) => error);
  t.match(classifyOutage(undiciError), { kind: 'refused' }, 'undici');

  const fetchError = await fetch(`http://127.0.0.1:${port}/`).catch((error: unknown) => error);
  t.equal((fetchError as Error).message, 'fetch failed', 'fetch hides the socket error in its cause');
  t.match(classifyOutage(fetchError), { kind: 'refused', detail: 'ECONNREFUSED' }, 'fetch, through `cause`');

  const keys = createRemoteJWKSet(new URL(`http://127.0.0.1:${port}/jwks`));
  const joseError = await jwtVerify('eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ.e30.c2ln', keys).catch((e: unknown) => e);
  t.match(classifyOutage(joseError), { kind: 'refused' }, "jose's remote key set");
});

t.test('reads the codes and messages each driver uses for a server that cannot serve', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['pg: the server terminated the connection', shaped({ code: '57P01' }), 'failover'],
    ['pg: the server is starting up', shaped({ code: '57P03' }), 'failover'],
    ['pg: a write reached a standby', shaped({ code: '25006' }), 'failover'],
    ['pg: a connection exception', shaped({ code: '08006' }), 'reset'],
    ['pg: the socket ended', new Error('Connection terminated unexpectedly'), 'reset'],
    ['pg: no statement answer in time', new Error('Query read timeout'), 'timeout'],
    ['pg-pool: no connection in time', new Error('timeout exceeded when trying to connect'), 'timeout'],
    ['ioredis: the command budget ran out', new Error('Command timed out'), 'timeout'],
    ['ioredis: the connection closed', new Error('Connection is closed.'), 'reset'],
    [
      'ioredis: a pipeline cut by the connection closing',
      shaped({ name: 'AbortError' }, 'Command aborted due to connection close'),
      'reset',
    ],
    ['ioredis: a cluster still moving slots', new Error('Too many Cluster redirections. Last error: x'), 'failover'],
    [
      'Redis: a demoted master',
      shaped({ name: 'ReplyError' }, "READONLY You can't write against a read only replica."),
      'failover',
    ],
    [
      'Redis: a cluster slot without master',
      shaped({ name: 'ReplyError' }, 'CLUSTERDOWN The cluster is down'),
      'failover',
    ],
    [
      'Redis: too few replicas',
      shaped({ name: 'ReplyError' }, 'NOREPLICAS Not enough good replicas to write.'),
      'failover',
    ],
    [
      'ioredis: all Sentinels down',
      new Error('All sentinels are unreachable. Retrying from scratch after 10ms.'),
      'unreachable',
    ],
    ['undici: no headers in time', shaped({ code: 'UND_ERR_HEADERS_TIMEOUT' }), 'timeout'],
    ['jose: no key set in time', shaped({ code: 'ERR_JWKS_TIMEOUT' }), 'timeout'],
    ['Node: every address refused', new AggregateError([shaped({ code: 'ECONNREFUSED' })]), 'refused'],
  ];
  for (const [what, error, kind] of cases) t.equal(classifyOutage(error)?.kind, kind, what);
  t.equal(
    classifyOutage(new Error('Client has encountered a connection error and is not queryable'))?.notSent,
    true,
    'pg knew the connection was broken before sending: the statement never left',
  );
});

t.test('anything else is not an outage and stays what it is', async (t) => {
  const others: Array<[string, unknown]> = [
    ['pg: a unique violation', shaped({ code: '23505' })],
    ['pg: a syntax error', shaped({ code: '42601' })],
    ['Redis: a wrong command', shaped({ name: 'ReplyError' }, 'ERR wrong number of arguments')],
    ['a refusal of ours', fail('invalid_grant')],
    ['a plain error', new Error('boom')],
    ['a string', 'ECONNREFUSED'],
    ['null', null],
  ];
  for (const [what, error] of others) {
    t.equal(classifyOutage(error), null, what);
    t.equal(toDependencyError('postgres', error), null, what);
  }
  let deep: unknown = shaped({ code: 'ECONNREFUSED' });
  for (let i = 0; i < 10; i++) deep = new Error('wrapped', { cause: deep });
  t.equal(classifyOutage(deep), null, 'a cause chain is followed only a few levels');
});

t.test('an outage becomes a 503 naming the part, with Retry-After and no driver detail', async (t) => {
  const error = toDependencyError('postgres', shaped({ code: 'ECONNREFUSED' }, 'connect ECONNREFUSED 10.0.0.5:5432'));
  t.ok(isDependencyUnavailable(error));
  t.match(error, { dependency: 'postgres', kind: 'refused', detail: 'ECONNREFUSED' });
  t.equal(toDependencyError('redis', error), error, 'one already classified keeps its dependency');
  const failure = unavailableFailure(error!);
  t.equal(failure.status, 503);
  t.same(failure.headers, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  t.same(failure.toEnvelope(), {
    ok: false,
    reason: 'unavailable',
    message: 'the database (PostgreSQL) is unavailable; retry shortly',
  });
  t.notMatch(JSON.stringify(failure.toEnvelope()), /10\.0\.0\.5|ECONNREFUSED/, 'no address or driver text');
  t.match(unavailableFailure({ dependency: 'control_plane' }).message, /^the control plane is unavailable/);
  t.notOk(isDependencyUnavailable(new Error('x')));
  t.ok(isDependencyUnavailable(new DependencyUnavailableError('redis', 'timeout', 'slow')));
});
