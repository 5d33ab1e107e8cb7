import t from 'tap';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { verifyClientSecret } from '../../../lib/oauth/client-auth.js';
import { DEMO_POLICY, ensureLocalGatewayClient } from '../../../control-plane/src/clients/local-gateway.js';
import { openServices, tempDir } from '../../helpers/build.js';

t.test('keyplane up registers its gateway once and issues a fresh secret at every start', async (t) => {
  const dataDir = tempDir(t);
  const { services } = await openServices(t, { dataDir });

  const first = await ensureLocalGatewayClient(services, { gatewayUrl: 'http://localhost:4480', policy: DEMO_POLICY });
  t.equal(first.created, true);
  const stored = await services.storage.clients.get(first.clientId);
  t.match(stored, {
    type: 'confidential',
    ownerId: null,
    revision: 1,
    metadata: {
      redirect_uris: ['http://localhost:4480/_gate/callback'],
      post_logout_redirect_uris: ['http://localhost:4480/'],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_basic',
      resources: ['http://localhost:4480'],
      gateway: DEMO_POLICY,
      first_party: true,
    },
  });
  t.ok(verifyClientSecret(first.clientSecret, stored!.secretHash));
  t.equal(
    statSync(join(dataDir, 'up-gateway-client.json')).mode & 0o777,
    0o600,
    'only the client id is kept, private to the owner',
  );

  const second = await ensureLocalGatewayClient(services, { gatewayUrl: 'http://localhost:5555', policy: DEMO_POLICY });
  t.equal(second.created, false);
  t.equal(second.clientId, first.clientId, 'the same client');
  const updated = await services.storage.clients.get(first.clientId);
  t.equal(updated!.revision, 2);
  t.same(updated!.metadata.redirect_uris, ['http://localhost:5555/_gate/callback'], 'a new gateway port is picked up');
  t.ok(verifyClientSecret(second.clientSecret, updated!.secretHash));
  t.notOk(verifyClientSecret(first.clientSecret, updated!.secretHash), "the previous run's secret no longer works");
});

t.test('a remembered client that was deleted is registered anew', async (t) => {
  const dataDir = tempDir(t);
  const { services } = await openServices(t, { dataDir });
  const first = await ensureLocalGatewayClient(services, { gatewayUrl: 'http://localhost:4480', policy: DEMO_POLICY });
  await services.storage.clients.remove(first.clientId);
  const again = await ensureLocalGatewayClient(services, { gatewayUrl: 'http://localhost:4480', policy: DEMO_POLICY });
  t.equal(again.created, true);
  t.not(again.clientId, first.clientId);
});
