import { setTimeout as sleep } from 'node:timers/promises';
import { Writable } from 'node:stream';
import t from 'tap';
import { request } from 'undici';
import { loadGatewayConfig } from '#config/load.js';
import { startGateway } from '../../gateway/src/server.js';
import { tempDir } from '../helpers/build.js';
import { startLiveControlPlane } from '../helpers/live-browser.js';
import { ADMIN } from '../helpers/oidc.js';
import { startUpstream } from './helpers.js';

const sink = () =>
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });

/** Polls `probe` until it returns true or `ms` pass; returns whether it did. Real peers, so real time. */
async function within(ms: number, probe: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    await sleep(100);
  }
  return false;
}

async function json(
  url: string,
  init: Parameters<typeof request>[1] = {},
): Promise<{ status: number; body: Record<string, any> }> {
  const res = await request(url, init);
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, any> };
}

async function statusOf(url: string): Promise<number> {
  const res = await request(url);
  await res.body.dump();
  return res.statusCode;
}

t.test(
  'a real gateway pulls its signed config from a real control plane, follows an update within 5 s and shows green',
  async (t) => {
    const cp = await startLiveControlPlane(t, { adminToken: ADMIN });
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };

    const registered = await json(`${cp.url}/register`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({
        client_name: 'Edge',
        redirect_uris: ['http://localhost:4480/_gate/callback'],
        scope: 'openid email',
        gateway: {
          mode: 'enforce',
          routes: [
            { path: '/open', public: true },
            { path: '/private', min_assurance: 'passkey' },
          ],
        },
      }),
    });
    t.equal(registered.status, 201);
    const client = registered.body as {
      client_id: string;
      client_secret: string;
      registration_access_token: string;
      revision: number;
    };

    const upstream = await startUpstream(t);
    const gw = await startGateway(
      loadGatewayConfig({
        env: {},
        overrides: {
          port: 0,
          dataDir: tempDir(t, 'keyplane-gw-'),
          controlPlane: cp.url,
          clientId: client.client_id,
          clientSecret: client.client_secret,
          upstream: upstream.url,
          logLevel: 'warn',
        },
      }),
      { logStream: sink() },
    );
    t.teardown(() => gw.close());

    t.ok(
      await within(30_000, async () => (await statusOf(`${gw.url}/readyz`)) === 200),
      'ready once the signed config arrived',
    );
    t.equal((await json(`${gw.url}/readyz`)).body['configVersion'], 1);
    t.equal(await statusOf(`${gw.url}/open`), 200, 'the public route passes');
    t.equal(await statusOf(`${gw.url}/private`), 401, 'the protected route needs a caller');

    const statusUrl = `${cp.url}/gateway/status/${client.client_id}`;
    t.ok(
      await within(30_000, async () => (await json(statusUrl, { headers: admin })).body['status'] === 'green'),
      'green once evidence arrived',
    );

    // RFC 7592 update: /open is no longer public.
    const current = await json(`${cp.url}/register/${client.client_id}`, {
      headers: { authorization: `Bearer ${client.registration_access_token}` },
    });
    const updated = await json(`${cp.url}/register/${client.client_id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${client.registration_access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        ...current.body,
        revision: current.body['revision'],
        gateway: { mode: 'enforce', routes: [{ path: '/private', min_assurance: 'passkey' }] },
      }),
    });
    t.equal(updated.status, 200);
    t.ok(
      await within(30_000, async () => (await statusOf(`${gw.url}/open`)) === 401),
      'the new policy is in force within 5 s of the update',
    );
    t.equal((await json(`${gw.url}/readyz`)).body['configVersion'], 2);

    t.ok(
      await within(30_000, async () => {
        const { body } = await json(statusUrl, { headers: admin });
        return body['status'] === 'green' && body['declared']?.version === 2;
      }),
      'green again once the gateway reports the new config',
    );
    const { body } = await json(statusUrl, { headers: admin });
    t.match(body['observed'], [
      {
        gateway: gw.url,
        fresh: true,
        config: { version: 2, hash: body['declared'].hash, mode: 'enforce' },
        counts: { refused: { unauthorized: Number } },
      },
    ]);
    const metrics = await (await request(`${gw.url}/metrics`)).body.text();
    t.match(metrics, /kp_gate_evidence_pushes_total\{outcome="accepted"\} [1-9]/);
  },
);

t.test('a gateway the control plane refuses stays closed and says why in its log', async (t) => {
  const cp = await startLiveControlPlane(t, { adminToken: ADMIN });
  const registered = await json(`${cp.url}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      redirect_uris: ['http://localhost:4480/_gate/callback'],
      gateway: { mode: 'enforce', routes: [] },
    }),
  });
  const logs: string[] = [];
  const gw = await startGateway(
    loadGatewayConfig({
      env: {},
      overrides: {
        port: 0,
        dataDir: tempDir(t, 'keyplane-gw-'),
        controlPlane: cp.url,
        clientId: registered.body['client_id'],
        clientSecret: 'not-the-secret',
        logLevel: 'warn',
      },
    }),
    {
      logStream: new Writable({
        write(chunk, _encoding, done) {
          logs.push(String(chunk));
          done();
        },
      }),
    },
  );
  t.teardown(() => gw.close());
  t.ok(
    await within(30_000, async () => logs.some((line) => line.includes('"gateway.config_unavailable"'))),
    'a warning names the refusal',
  );
  t.match(JSON.parse(logs.find((line) => line.includes('"gateway.config_unavailable"'))!), { level: 40, status: 401 });
  t.equal(await statusOf(`${gw.url}/readyz`), 503, 'and it fails closed');
});
