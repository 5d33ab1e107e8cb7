import t from 'tap';
import { ADMIN } from '../helpers/oidc.js';
import { build, TEST_ISSUER } from '../helpers/build.js';
import { runInProcess } from '../helpers/cli-in-process.js';
import { startUpstreamOidc } from '../helpers/upstream-oidc.js';

const upstream = await startUpstreamOidc(t);
const { app } = await build(t, {
  config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': upstream.tls.caFile },
  areas: ['federation'],
});
await app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const env = { KEYPLANE_ADMIN_TOKEN: ADMIN };

t.test('keyplane connections add, list and remove', async (t) => {
  const add = ['connections', 'add', '--name', 'Partner', '--issuer', upstream.issuer, '--client-id', 'kp'];
  const noSecret = await runInProcess([...add, '--control-plane', url], env);
  t.equal(noSecret.code, 2, 'a client secret is never a flag: without KEYPLANE_CONNECTION_SECRET, usage');
  const added = await runInProcess([...add, '--control-plane', url], {
    ...env,
    KEYPLANE_CONNECTION_SECRET: 'partner-secret-0123456789',
  });
  t.equal(added.code, 0, added.stderr);
  t.match(added.stdout, /^con_[A-Za-z0-9_-]+\n$/, 'only the id on stdout');
  const connectionId = added.stdout.trim();
  t.match(added.stderr, `register redirect_uri ${TEST_ISSUER}/federation/${connectionId}/callback`);
  const keyed = await runInProcess(
    [
      'connections',
      'add',
      '--name',
      'Keyed',
      '--issuer',
      upstream.issuer,
      '--client-id',
      'kp2',
      '--private-key-jwt',
      '--control-plane',
      url,
      '--json',
    ],
    env,
  );
  t.equal(keyed.code, 0, keyed.stderr);
  t.match(JSON.parse(keyed.stdout), { ok: true, jwks_uri: /\/jwks$/ });

  const list = await runInProcess(['connections', 'list', '--control-plane', url], env);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, `${connectionId} oidc "Partner" ${upstream.issuer}`);
  t.match(list.stdout, '"Keyed"');

  const removed = await runInProcess(['connections', 'remove', connectionId, '--control-plane', url], env);
  t.equal(removed.code, 0, removed.stderr);
  t.match(removed.stdout, new RegExp(`^removed ${connectionId}, receipt [0-9a-f]{64}`));
  const again = await runInProcess(['connections', 'remove', connectionId, '--control-plane', url], env);
  t.equal(again.code, 1, 'refused: not_found');
});
