import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../helpers/until.js';
import { request } from 'undici';
import { CLIENT_ID, controlPlaneJwks, signConfig, startTestGateway, startUpstream } from './helpers.js';

const POLICY = { mode: 'enforce' as const, routes: [{ path: '/', min_assurance: 'email' as const }] };

t.test(
  'pulls the signed config with client auth and ETag; refuses rollbacks; keeps enforcing while the control plane is away',
  async (t) => {
    const served = { jws: '', etag: '"v0"', up: true };
    const seen = { conditional: 0, unauthorized: 0 };
    const cp = createServer(async (req, res) => {
      if (!served.up) return res.socket?.destroy();
      if (req.url === '/.well-known/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(await controlPlaneJwks()));
      }
      if (req.url === '/gateway/config') {
        if (req.headers.authorization !== `Basic ${Buffer.from(`${CLIENT_ID}:s3cret`).toString('base64')}`) {
          seen.unauthorized++;
          res.writeHead(401);
          return res.end();
        }
        if (req.headers['if-none-match'] === served.etag) {
          seen.conditional++;
          res.writeHead(304);
          return res.end();
        }
        res.writeHead(200, { 'content-type': 'application/jwt', etag: served.etag });
        return res.end(served.jws);
      }
      res.writeHead(404);
      res.end();
    });
    await new Promise<void>((resolve) => cp.listen(0, '127.0.0.1', resolve));
    t.teardown(
      () =>
        new Promise<void>((resolve) => {
          cp.closeAllConnections();
          cp.close(() => resolve());
        }),
    );
    const cpUrl = `http://127.0.0.1:${(cp.address() as AddressInfo).port}`;
    served.jws = await signConfig(3, POLICY, Date.now(), cpUrl);
    served.etag = '"v3"';

    const upstream = await startUpstream(t);
    const gw = await startTestGateway(t, {
      upstream: upstream.url,
      overrides: { controlPlane: cpUrl, clientSecret: 's3cret' },
    });
    const pull = gw.running.configPull!;
    t.ok(pull, 'a gateway with client credentials pulls');
    await until('the pulled config', async () => gw.running.gateway.configHolder.current ?? undefined);
    t.match(
      await (await request(`${gw.url}/readyz`)).body.json(),
      { ok: true, configVersion: 3 },
      'ready once the pulled config verifies',
    );

    t.match(await pull.pullOnce(), { outcome: 'unchanged' });
    t.ok(seen.conditional >= 1, 'an unchanged config is a 304 for If-None-Match');

    served.jws = await signConfig(2, POLICY, Date.now(), cpUrl);
    served.etag = '"v2"';
    t.match(await pull.pullOnce(), { outcome: 'refused', reason: 'rollback' });
    t.equal(gw.running.gateway.configHolder.current?.version, 3, 'the held config stays in force');

    served.jws = `${(await signConfig(4, POLICY, Date.now(), cpUrl)).slice(0, -4)}AAAA`;
    served.etag = '"v4-forged"';
    t.match(await pull.pullOnce(), { outcome: 'refused', reason: 'bad_signature' });

    served.jws = await signConfig(5, { ...POLICY, mode: 'observe' }, Date.now(), cpUrl);
    served.etag = '"v5"';
    t.match(await pull.pullOnce(), { outcome: 'installed', version: 5 });

    served.up = false;
    t.match(await pull.pullOnce(), { outcome: 'unavailable' });
    const cookie = await gw.sessionCookie();
    t.equal(
      (await request(`${gw.url}/app`, { headers: { cookie } })).statusCode,
      200,
      'sessions keep working while the control plane is down',
    );
    const metrics = await (await request(`${gw.url}/metrics`)).body.text();
    t.match(metrics, /kp_gate_config_pulls_total\{outcome="refused"\} 2/);
    t.equal(seen.unauthorized, 0);
  },
);

t.test('wrong client credentials never install a config', async (t) => {
  const cp = createServer((req, res) => {
    res.writeHead(req.headers.authorization ? 401 : 400);
    res.end();
  });
  await new Promise<void>((resolve) => cp.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => cp.close(() => resolve())));
  const gw = await startTestGateway(t, {
    overrides: { controlPlane: `http://127.0.0.1:${(cp.address() as AddressInfo).port}`, clientSecret: 'wrong' },
  });
  t.match(await gw.running.configPull!.pullOnce(), { outcome: 'unavailable', status: 401 });
  t.equal((await request(`${gw.url}/readyz`)).statusCode, 503, 'still failing closed');
});
