import t from 'tap';
import type { Receipt } from '#lib/ledger/receipt.js';
import { openSqliteStorage } from '../../../control-plane/src/storage/sqlite/index.js';
import type { StoredConnection } from '../../../control-plane/src/storage/interface.js';
import { WebhookTargets } from '../../../control-plane/src/webhooks/outbox.js';
import { receiptConcernsOrg, type OwnedKind } from '#lib/webhooks/org-scope.js';
import { tempDir } from '../../helpers/build.js';

/**
 * What an org's webhooks see is read from storage (docs/events.md#org-webhooks): the org's
 * connections and SCIM tokens count as its own, another org's do not.
 */
const connection = (connectionId: string, orgId: string): StoredConnection => ({
  connectionId,
  orgId,
  type: 'oidc',
  name: connectionId,
  settings: { issuer: 'https://idp.example', clientId: 'kp', tokenEndpointAuthMethod: 'client_secret_basic' },
  secretSealed: Buffer.from([1]),
  domains: [],
  jit: null,
  required: false,
  sessionMaxHours: 12,
  maxAssurance: 'email',
  createdAt: 1,
  updatedAt: 1,
});
const token = (tokenId: string, orgId: string) => ({
  tokenId,
  orgId,
  secretHash: '0'.repeat(64),
  createdBy: 'usr_owner',
  createdAt: 1,
  lastUsedAt: null,
  revokedAt: null,
});

t.test("an org's webhook targets hold its connections and SCIM tokens", async (t) => {
  const storage = openSqliteStorage(tempDir(t));
  t.teardown(() => storage.close());
  for (const [orgId, slug] of [
    ['org_acme', 'acme'],
    ['org_other', 'other'],
  ] as const)
    await storage.orgs.create({ orgId, slug, name: slug, website: null, createdAt: 1 }, 'usr_owner');
  await storage.connections.insert(connection('con_acme', 'org_acme'));
  await storage.connections.insert(connection('con_other', 'org_other'));
  await storage.scim.addToken(token('sct_acme', 'org_acme'));
  await storage.scim.addToken(token('sct_other', 'org_other'));
  await storage.webhooks.insert({
    webhookId: 'whk_acme',
    orgId: 'org_acme',
    url: 'https://hooks.example/acme',
    events: ['*'],
    description: null,
    secretSealed: Buffer.from([1]),
    previousSecretSealed: null,
    previousSecretUntil: null,
    state: 'active',
    failingSince: null,
    createdAt: 1,
    updatedAt: 1,
  });
  const targets = new WebhookTargets(storage);
  await targets.refresh();
  const { owners } = targets.snapshot();
  const seen = (fields: Record<string, unknown>) =>
    receiptConcernsOrg(
      { kind: 'x', at: '2026-12-07T12:00:00.000Z', outcome: 'success', ...fields } as Receipt,
      'org_acme',
      (kind: OwnedKind, id) => owners.get(`${kind}:${id}`),
    );
  t.ok(seen({ connectionId: 'con_acme', subject: 'h' }), 'a receipt naming its connection');
  t.ok(seen({ actor: { type: 'connection', id: 'con_acme' } }), 'its connection acting');
  t.notOk(seen({ connectionId: 'con_other', subject: 'h' }), "another org's connection");
  t.ok(seen({ tokenId: 'sct_acme' }), 'a receipt naming its SCIM token');
  t.ok(seen({ actor: { type: 'scim_token', id: 'sct_acme' } }), 'its SCIM token acting');
  t.notOk(seen({ actor: { type: 'scim_token', id: 'sct_other' } }), "another org's SCIM token");
});
