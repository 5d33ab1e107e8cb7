import { connect, createServer, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { request } from 'undici';
import { loadControlPlaneConfig } from '#config/load.js';
import { listen } from '#lib/runtime/listen.js';
import { startControlPlane } from '../../control-plane/src/server.js';
import { until } from '../helpers/until.js';

/**
 * The control plane binds its port before its storage opens (so `--port 0` knows its issuer), and a
 * peer may call in between (control-plane/src/server.ts). A request that arrives then is held until
 * the app is ready; when start-up fails instead, it is answered 503 `not_ready`, not left hanging.
 */
t.test('a request held during a start-up that fails is answered 503 not_ready', async (t) => {
  // A "database" that accepts connections and never answers: start-up waits on it (5 s, time enough
  // for the request below to arrive under any load), then gives up.
  const held = new Set<Socket>();
  const blackHole = createServer((socket) => held.add(socket.on('error', () => undefined)));
  const databasePort = await listen(blackHole, 0, '127.0.0.1');
  t.teardown(() => {
    for (const socket of held) socket.destroy();
    blackHole.close();
  });
  // A free port for the control plane, known before it starts.
  const probe = createServer();
  const port = await listen(probe, 0, '127.0.0.1');
  await new Promise((resolve) => probe.close(resolve));
  const dataDir = mkdtempSync(join(tmpdir(), 'keyplane-early-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      port,
      dataDir,
      databaseUrl: `postgres://postgres@127.0.0.1:${databasePort}/postgres`,
      'database.connectTimeoutMs': 5000,
    } as never,
  });
  const starting = startControlPlane(config, { warn: () => undefined, logStream: { write: () => true } as never });
  const failed = starting.then(
    () => undefined,
    (error: unknown) => error,
  );
  await until(
    'the port accepts connections',
    () =>
      new Promise<true | undefined>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        socket.on('connect', () => (socket.destroy(), resolve(true))).on('error', () => resolve(undefined));
      }),
  );
  const answer = await request(`http://127.0.0.1:${port}/healthz`);
  t.ok(await failed, 'start-up failed');
  t.equal(answer.statusCode, 503);
  t.same(await answer.body.json(), { ok: false, reason: 'not_ready', message: 'the control plane could not start' });
});
