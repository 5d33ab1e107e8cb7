import t from 'tap';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { verifyClientSecret } from '#lib/oauth/client-auth.js';
import { ensureOperatorClient } from '../../../control-plane/src/clients/operator-client.js';
import { openServices, tempDir } from '../../helpers/build.js';

const gatewayMetadata = (url: string) => ({
  client_name: 'An operator gateway',
  redirect_uris: [`${url}/_gate/callback`],
  post_logout_redirect_uris: [`${url}/`],
  grant_types: ['authorization_code', 'refresh_token'],
  token_endpoint_auth_method: 'client_secret_basic',
  scope: 'openid email offline_access',
  resources: [url],
  first_party: true,
});
const gateway = (url: string) => ({
  stateFile: 'gateway-client.json',
  label: 'the gateway client',
  metadata: gatewayMetadata(url),
});

t.test("an operator's confidential client is registered once and gets a fresh secret at every start", async (t) => {
  const dataDir = tempDir(t);
  const { services } = await openServices(t, { dataDir });

  const first = await ensureOperatorClient(services, gateway('http://localhost:4480'));
  t.equal(first.created, true);
  const stored = await services.storage.clients.get(first.clientId);
  t.match(stored, {
    type: 'confidential',
    ownerId: null,
    revision: 1,
    metadata: { redirect_uris: ['http://localhost:4480/_gate/callback'], first_party: true },
  });
  t.ok(verifyClientSecret(first.clientSecret!, stored!.secretHash));
  t.equal(
    statSync(join(dataDir, 'gateway-client.json')).mode & 0o777,
    0o600,
    'only the client id is kept, private to the owner',
  );

  const second = await ensureOperatorClient(services, gateway('http://localhost:5555'));
  t.equal(second.created, false);
  t.equal(second.clientId, first.clientId, 'the same client');
  const updated = await services.storage.clients.get(first.clientId);
  t.equal(updated!.revision, 2);
  t.same(updated!.metadata.redirect_uris, ['http://localhost:5555/_gate/callback'], 'a new port is picked up');
  t.ok(verifyClientSecret(second.clientSecret!, updated!.secretHash));
  t.notOk(verifyClientSecret(first.clientSecret!, updated!.secretHash), "the previous run's secret no longer works");
});

t.test('a public client is left alone while its metadata stays, and updated when it changes', async (t) => {
  const { services } = await openServices(t);
  const page = (origin: string) => ({
    stateFile: 'page-client.json',
    label: 'the page client',
    metadata: {
      redirect_uris: [`${origin}/callback`],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'none',
      scope: 'openid',
    },
  });
  const first = await ensureOperatorClient(services, page('http://localhost:4481'));
  t.equal(first.clientSecret, undefined, 'no secret for a public client');
  const again = await ensureOperatorClient(services, page('http://localhost:4481'));
  t.same(again, { clientId: first.clientId, created: false });
  t.equal((await services.storage.clients.get(first.clientId))!.revision, 1, 'unchanged metadata writes nothing');
  await ensureOperatorClient(services, page('http://localhost:4482'));
  const moved = await services.storage.clients.get(first.clientId);
  t.equal(moved!.revision, 2);
  t.same(moved!.metadata.redirect_uris, ['http://localhost:4482/callback']);
});

t.test('a remembered client that was deleted is registered anew', async (t) => {
  const { services } = await openServices(t);
  const first = await ensureOperatorClient(services, gateway('http://localhost:4480'));
  await services.storage.clients.remove(first.clientId);
  const again = await ensureOperatorClient(services, gateway('http://localhost:4480'));
  t.equal(again.created, true);
  t.not(again.clientId, first.clientId);
});
