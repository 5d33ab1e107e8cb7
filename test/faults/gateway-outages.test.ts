import t from 'tap';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/src/server.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { TEST_MASTER_KEY, tempDir } from '../helpers/build.js';
import { until } from '../helpers/own-process.js';
import { ownRedisAvailability, startOwnRedis } from '../helpers/own-redis.js';
import { startTestGateway, startUpstream } from '../gateway/helpers.js';
import {
  ADMIN,
  HTML,
  Jar,
  POLICY,
  authorizeAt,
  get,
  passkeyUser,
  sessionIn,
  type World,
} from '../gateway/real-world.js';

/**
 * The gateway's dependencies going away (integration tier, slow): a real control plane the
 * test stops and starts again on the same port, and a Redis of the gateway's own. What the last
 * signed config, the session cookie and the cached keys can serve goes on being served; what
 * needs the missing part answers 503 `unavailable` with Retry-After (never a 500, never a 401
 * for a token that may be good); the gateway logs each outage once each way; /readyz follows
 * Redis, not the control plane.
 */

const redis = ownRedisAvailability();
t.setTimeout(300_000);

const quiet = () =>
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });

async function controlPlaneOn(port: number, dataDir: string): Promise<RunningControlPlane> {
  return startControlPlane(
    loadControlPlaneConfig({
      env: {},
      overrides: {
        dataDir,
        host: '127.0.0.1',
        port,
        masterKey: TEST_MASTER_KEY,
        logLevel: 'warn',
        adminToken: ADMIN,
        // The gateway's clock is moved on to make its session due; the ID token of each
        // refresh must not look expired to it.
        'lifetimes.idToken': 86_400,
      },
    }),
    { logStream: quiet() },
  );
}

if (!redis.run) t.test('gateway outages', { skip: redis.reason }, () => undefined);
else
  t.test('the control plane and then Redis go away behind a gateway, and come back', async (t) => {
    const cpPort = await findFreePort();
    const cpData = tempDir(t);
    let cp = await controlPlaneOn(cpPort, cpData);
    t.teardown(() => cp.close());
    const cache = await startOwnRedis(tempDir(t, 'keyplane-gw-redis-'));
    t.teardown(() => cache.stop());

    const port = await findFreePort();
    const registered = await request(`${cp.url}/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Gateway',
        redirect_uris: [`http://localhost:${port}/_gate/callback`],
        grant_types: ['authorization_code', 'refresh_token'],
        scope: 'openid email offline_access',
        token_endpoint_auth_method: 'client_secret_basic',
        gateway: POLICY,
      }),
    });
    const client = (await registered.body.json()) as { client_id: string; client_secret: string };
    const clock = { offset: 0 };
    const upstream = await startUpstream(t);
    const gatewayData = tempDir(t, 'keyplane-gw-');
    const gatewayOptions = {
      upstream: upstream.url,
      remoteKeys: true,
      dataDir: gatewayData,
      overrides: {
        controlPlane: cp.url,
        clientId: client.client_id,
        clientSecret: client.client_secret,
        redisUrl: cache.url,
        controlPlaneTimeoutMs: 1000,
        'redis.commandTimeoutMs': 500,
      },
      deps: { now: () => Date.now() + clock.offset },
    };
    const gw = await startTestGateway(t, { ...gatewayOptions, overrides: { ...gatewayOptions.overrides, port } });
    await until('the signed config pulled', async () => (gw.running.gateway.configHolder.current ? true : undefined));

    // A browser signs in through the gateway (the control plane's authorize and the callback).
    const user = await passkeyUser(cp.url, 'outage-user');
    const jar = new Jar();
    const signin = await get(`${gw.url}/app`, HTML);
    jar.absorb(signin.setCookie);
    const callbackUrl = await authorizeAt({ cp, gw, user } as World, signin.location!);
    const landed = await get(callbackUrl.toString(), { cookie: jar.header() });
    jar.absorb(landed.setCookie);
    t.equal(landed.status, 302, 'signed in');
    const page = () => get(`${gw.url}/app`, { ...HTML, cookie: jar.header() });
    t.equal((await page()).status, 200);
    const accessToken = (await sessionIn({ gw } as World, jar)).accessToken!;

    // ---- the control plane goes away ----
    await cp.close();
    t.equal((await page()).status, 200, 'a session that is not due needs no control plane');
    t.equal((await get(`${gw.url}/readyz`)).status, 200, 'the gateway stays ready: it serves what it holds');
    const callback = await get(
      `${gw.url}/_gate/callback?state=${new URL(signin.location!).searchParams.get('state')}&code=x`,
      {
        cookie: signin.setCookie
          ? [signin.setCookie]
              .flat()
              .map((line) => line.split(';')[0])
              .join('; ')
          : '',
      },
    );
    t.equal(callback.status, 503, 'a code exchange the control plane cannot answer');
    t.match(JSON.parse(callback.body), { reason: 'unavailable', message: /the control plane/ });
    t.equal(callback.headers['retry-after'], '5');
    // The access token lives 600 s: the session is due for a refresh.
    clock.offset = 595_000;
    const due = await page();
    t.equal(due.status, 503, 'a session due for a refresh');
    t.match(JSON.parse(due.body), { reason: 'unavailable' });
    // A replica started while the control plane is away: the signed config from the disk, but no key set yet.
    const replica = await startTestGateway(t, gatewayOptions);
    const bearer = await get(`${replica.url}/api`, { authorization: `Bearer ${accessToken}` });
    t.equal(bearer.status, 503, 'a token whose key cannot be fetched may be good: 503, not 401');
    t.match(JSON.parse(bearer.body), { reason: 'unavailable' });

    cp = await controlPlaneOn(cpPort, cpData);
    await until(
      'the refresh goes through again',
      async () => ((await page()).status === 200 ? true : undefined),
      30_000,
    );
    jar.absorb((await page()).setCookie);

    const cameBack = (dependency: string) =>
      until(`the log says ${dependency} is back`, async () =>
        gw.logs.some((chunk) => chunk.includes('"dependency.up"') && chunk.includes(`"dependency":"${dependency}"`))
          ? true
          : undefined,
      );
    // Over once the control plane has answered for the settle period.
    await cameBack('control_plane');

    // ---- the gateway's Redis goes away ----
    await cache.stop('SIGKILL');
    t.equal((await page()).status, 200, 'a session that is not due needs no Redis');
    await until('/readyz says not ready', async () =>
      (await get(`${gw.url}/readyz`)).status === 503 ? true : undefined,
    );
    clock.offset += 600_000;
    const refresh = await page();
    t.equal(refresh.status, 503, 'a refresh needs its single-flight lock in Redis');
    t.match(JSON.parse(refresh.body), { reason: 'unavailable', message: /shared state \(Redis\)/ });
    t.equal(refresh.headers['retry-after'], '5');
    await cache.start();
    await until(
      'the refresh goes through again',
      async () => ((await page()).status === 200 ? true : undefined),
      30_000,
    );
    t.equal((await get(`${gw.url}/readyz`)).status, 200);

    await cameBack('redis');
    const news = gw.logs
      .flatMap((chunk) => chunk.split('\n').filter(Boolean))
      .map((line) => JSON.parse(line))
      .filter((line) => typeof line.event === 'string' && line.event.startsWith('dependency.'));
    t.same(
      news.map((line) => `${line.event} ${line.dependency}`),
      ['dependency.down control_plane', 'dependency.up control_plane', 'dependency.down redis', 'dependency.up redis'],
      'one line when each went away, one when it came back',
    );
    const metrics = await get(`${gw.url}/metrics`);
    t.match(metrics.body, /kp_dependency_errors_total\{dependency="control_plane"\} [1-9]/);
    t.match(metrics.body, /kp_dependency_errors_total\{dependency="redis"\} [1-9]/);
    t.notMatch(metrics.body, /kp_gate_requests_total\{outcome="internal"\}/, 'no internal error');
  });
