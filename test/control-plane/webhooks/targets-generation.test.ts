import type { Receipt } from '#lib/ledger/receipt.js';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import type { ControlPlaneServices } from '../../../control-plane/src/context.js';
import type { Storage, StoredConnection } from '../../../control-plane/src/storage/interface.js';
import { WebhookTargets, webhookFollower } from '../../../control-plane/src/webhooks/outbox.js';
import { onEveryBackend } from '../../helpers/storage-backends.js';

/**
 * Webhook targets follow the directory generation (docs/events.md#org-webhooks): what an org
 * owns and manages is read again when a write moved the generation, on whichever replica made
 * it, and not at all while nothing moved.
 */
const at = '2026-12-07T12:00:00.000Z';
const receipt = (fields: Record<string, unknown>) =>
  ({ kind: 'account.disabled', at, outcome: 'success', actor: { type: 'system' }, ...fields }) as Receipt;
const account = (identityId: string, managedBy?: string) => ({
  identityId,
  username: identityId.replace('usr_', ''),
  displayName: '',
  preferences: {},
  founder: false,
  ...(managedBy ? { managedBy } : {}),
  createdAt: 1,
  updatedAt: 1,
});
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

async function orgWithWebhook(storage: Storage) {
  await storage.identities.create(account('usr_owner'));
  await storage.orgs.create(
    { orgId: 'org_acme', slug: 'acme', name: 'Acme', website: null, createdAt: 1 },
    'usr_owner',
  );
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
  const services = { config: { issuer: 'https://id.example' }, now: () => 1000 } as Pick<
    ControlPlaneServices,
    'config' | 'now'
  >;
  const follow = webhookFollower(services, targets, () => undefined);
  /** Whether the org's webhook queued `fields`' receipt, as the ledger would in its transaction. */
  const queues = async (fields: Record<string, unknown>) => {
    const before = (await storage.webhooks.backlog()).pending;
    await storage.transaction((tx) => follow(tx, receipt(fields), `h${Math.random()}`));
    return (await storage.webhooks.backlog()).pending > before;
  };
  return { targets, queues };
}

onEveryBackend((t, open) => {
  t.test('reads what the orgs own again only when the directory generation moved', async (t) => {
    const storage = await open();
    const { targets } = await orgWithWebhook(storage);
    await targets.refresh();
    t.equal(targets.ownerReads, 1);
    for (let poll = 0; poll < 5; poll++) await targets.refresh();
    t.equal(targets.ownerReads, 1, 'five quiet polls read the webhooks and the generation only');

    // A personal account, a person's own client, the operator's connection: nothing an org owns.
    await storage.identities.create(account('usr_someone'));
    await targets.refresh();
    t.equal(targets.ownerReads, 2, 'an account created moves the generation (it may be a managed one)');
    await storage.clients.insert({
      clientId: 'cl_personal',
      type: 'confidential',
      metadata: validateClientMetadata({ redirect_uris: ['https://personal.example/cb'] }),
      secretHash: 'a'.repeat(64),
      secretIssuedAt: 1,
      ownerId: 'usr_someone',
      registrationTokenHash: 'b'.repeat(64),
      revision: 1,
      createdAt: 1,
      updatedAt: 1,
    });
    await storage.connections.insert({ ...connection('con_operator', 'org_acme'), orgId: null });
    await targets.refresh();
    t.equal(targets.ownerReads, 2, "a person's client and the operator's connection leave it alone");

    await storage.connections.insert(connection('con_acme', 'org_acme'));
    await targets.refresh();
    t.equal(targets.ownerReads, 3, "the org's new connection moves it");
    await storage.connections.remove('con_acme');
    await targets.refresh();
    t.equal(targets.ownerReads, 4, 'and its removal');
  });

  t.test('a change made on another replica is seen by the next delivery after the next poll', async (t) => {
    const storage = await open();
    const { targets, queues } = await orgWithWebhook(storage);
    await targets.refresh();
    t.notOk(await queues({ identityId: 'usr_max' }), 'an account no one manages: not the org’s');

    // SCIM on another replica provisions the account: this replica's targets hear of it at the next poll.
    await storage.identities.create(account('usr_max', 'org_acme'));
    await targets.refresh();
    t.ok(await queues({ identityId: 'usr_max' }), 'the managed account’s life reaches the org’s webhook');

    // A membership change: the member's life elsewhere stays out, their membership change is seen.
    await storage.identities.create(account('usr_mia'));
    await storage.orgs.addMember('org_acme', { identityId: 'usr_mia', role: 'member', addedAt: 1 });
    const reads = targets.ownerReads;
    await targets.refresh();
    t.equal(targets.ownerReads, reads + 1, 'the membership moved the generation');
    t.ok(await queues({ kind: 'org.member_added', orgId: 'org_acme', identityId: 'usr_mia' }));
    t.notOk(await queues({ identityId: 'usr_mia' }), "a personal member's life elsewhere");

    await storage.connections.insert(connection('con_acme', 'org_acme'));
    t.notOk(await queues({ kind: 'connection.used', connectionId: 'con_acme' }), 'not before the next poll');
    await targets.refresh();
    t.ok(await queues({ kind: 'connection.used', connectionId: 'con_acme' }), 'the new connection, after it');
  });
});
