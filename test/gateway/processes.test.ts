import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { startCli, type Server } from '../helpers/cli.js';
import { tempDir } from '../helpers/build.js';
import { REDIS_URL, redisAvailability } from '../helpers/redis.js';
import { CLIENT_ID, controlPlaneJwks, dpopClient, signAccessToken, signConfig, startUpstream } from './helpers.js';

/**
 * Two `keyplane gateway` processes, as two replicas run, sharing one Redis: a DPoP proof
 * accepted by one is a replay at the other. The control plane is a stand-in serving the JWKS
 * and the signed config that both processes pull.
 */
const availability = await redisAvailability();

t.test(
  'a DPoP proof used at one gateway process is refused at another sharing Redis',
  { skip: availability.run ? false : availability.reason, timeout: 60_000 },
  async (t) => {
    const policy = { mode: 'enforce' as const, routes: [{ path: '/', dpop: 'required' as const }] };
    const standIn = createServer((req, res) => {
      void (async () => {
        if (req.url === '/.well-known/jwks.json') {
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify(await controlPlaneJwks()));
        }
        if (req.url === '/gateway/config') {
          res.writeHead(200, { 'content-type': 'application/jwt', etag: '"v1"' });
          return res.end(await signConfig(1, policy, Date.now(), controlPlane));
        }
        res.writeHead(404).end();
      })();
    });
    await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
    t.teardown(
      () =>
        new Promise<void>((resolve) => {
          standIn.closeAllConnections();
          standIn.close(() => resolve());
        }),
    );
    const controlPlane = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
    const upstream = await startUpstream(t);
    const publicUrl = 'http://gate.example.test';

    const replicas: Array<{ server: Server; local: string }> = [];
    for (let i = 0; i < 2; i++) {
      const dataDir = tempDir(t, 'keyplane-gw-process-');
      // A fixed public URL hides the port from the listening line; each replica finds its own free one.
      const probe = createServer();
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      const port = (probe.address() as AddressInfo).port;
      await new Promise<void>((resolve) => probe.close(() => resolve()));
      const server = await startCli(
        [
          'gateway',
          '--port',
          String(port),
          '--public-url',
          publicUrl,
          '--control-plane',
          controlPlane,
          '--upstream',
          upstream.url,
          '--client-id',
          CLIENT_ID,
          '--redis',
          REDIS_URL,
        ],
        { KEYPLANE_DATA_DIR: dataDir, KEYPLANE_GATEWAY_CLIENT_SECRET: 'stand-in-secret' },
        30_000,
      );
      t.teardown(() => server.stop());
      replicas.push({ server, local: `http://127.0.0.1:${port}` });
    }
    for (const { local } of replicas) {
      let ready = 0;
      for (let attempt = 0; attempt < 100 && ready !== 200; attempt++) {
        ready = (await request(`${local}/readyz`)).statusCode;
        if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      t.equal(ready, 200, `${local} pulled its signed config`);
    }

    const client = await dpopClient();
    const token = await signAccessToken({ audience: publicUrl, jkt: client.jkt, issuer: controlPlane });
    const headers = { authorization: `DPoP ${token}`, dpop: await client.proof('GET', `${publicUrl}/data`, token) };
    const first = await request(`${replicas[0]!.local}/data`, { headers });
    t.equal(first.statusCode, 200, 'accepted by the first process');
    await first.body.text();
    const replay = await request(`${replicas[1]!.local}/data`, { headers });
    t.equal(replay.statusCode, 401, 'the same proof at the second process is a replay');
    t.match(await replay.body.json(), { reason: 'invalid_dpop_proof' });
    const fresh = await request(`${replicas[1]!.local}/data`, {
      headers: { ...headers, dpop: await client.proof('GET', `${publicUrl}/data`, token) },
    });
    t.equal(fresh.statusCode, 200, 'a fresh proof is accepted there');
    await fresh.body.text();
    for (const { server } of replicas) t.equal(await server.stop(), 0, 'drains and exits 0');
  },
);
