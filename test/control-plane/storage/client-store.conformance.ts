import type { Test } from 'tap';
import type { Storage, StoredClient } from '../../../control-plane/src/storage/interface.js';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';

type Tap = Test;

function client(clientId: string, ownerId: string | null, redirect: string): StoredClient {
  return {
    clientId,
    type: 'confidential',
    metadata: validateClientMetadata({
      redirect_uris: [redirect],
      gateway: { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }] },
    }),
    secretHash: 'a'.repeat(64),
    secretIssuedAt: 1,
    ownerId,
    registrationTokenHash: 'b'.repeat(64),
    revision: 1,
    createdAt: 1,
    updatedAt: 1,
  };
}

/** Behaviour every ClientStore backend must show. */
export function clientStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test('client store: insert, read back, list by owner and redirect URIs', async (t) => {
    const storage = await open();
    const one = client('cl_1', 'usr_a', 'https://one.example.com/cb');
    await storage.clients.insert(one);
    await storage.clients.insert(client('cl_2', null, 'https://two.example.com/cb'));
    t.same(await storage.clients.get('cl_1'), one, 'metadata round-trips');
    t.equal(await storage.clients.get('cl_nope'), null);
    t.same(
      (await storage.clients.listByOwner('usr_a')).map((c) => c.clientId),
      ['cl_1'],
    );
    const all = (await storage.clients.list(null, 100)).map((c) => c.clientId);
    t.same(all, [...all].sort(), 'listed by client id');
    t.ok(all.includes('cl_1'));
    t.same(
      (await storage.clients.list(null, 1)).map((c) => c.clientId),
      all.slice(0, 1),
      'limit',
    );
    t.same(
      (await storage.clients.list(all[0]!, 100)).map((c) => c.clientId),
      all.slice(1),
      'after is exclusive',
    );
    t.same((await storage.clients.allRedirectUris()).sort(), [
      'https://one.example.com/cb',
      'https://two.example.com/cb',
    ]);
    t.same(
      (await storage.clients.findByRedirectUri('https://two.example.com/cb')).map((c) => c.clientId),
      ['cl_2'],
    );
    t.same(await storage.clients.findByRedirectUri('https://two.example.com/cb/'), [], 'exact match only');
    await t.rejects(storage.clients.insert(one), 'client ids are unique');
    const plain = {
      ...client('cl_3', 'usr_a', 'https://three.example.com/cb'),
      metadata: validateClientMetadata({ redirect_uris: ['https://three.example.com/cb'] }),
    };
    await storage.clients.insert(plain);
    t.same(
      (await storage.clients.listGateways()).map((c) => c.clientId),
      ['cl_1', 'cl_2'],
      'only clients with a gateway policy',
    );
    t.same(await storage.clients.listInPlace(), [], 'no client turned in-place sign-in on');
    const inPlace = client('cl_4', null, 'https://four.example.com/cb');
    await storage.clients.insert({ ...inPlace, metadata: { ...inPlace.metadata, in_place: true } });
    t.same(
      (await storage.clients.listInPlace()).map((c) => [c.clientId, c.metadata.redirect_uris]),
      [['cl_4', ['https://four.example.com/cb']]],
    );
  });

  t.test('client store: an update applies only on the expected revision', async (t) => {
    const storage = await open();
    await storage.clients.insert(client('cl_1', null, 'https://one.example.com/cb'));
    const metadata = validateClientMetadata({
      redirect_uris: ['https://new.example.com/cb'],
      token_endpoint_auth_method: 'none',
    });
    const updated = await storage.clients.update('cl_1', 1, {
      type: 'public',
      metadata,
      secretHash: null,
      secretIssuedAt: null,
      at: 5,
    });
    t.equal(updated?.revision, 2);
    t.equal(updated?.type, 'public');
    t.equal(updated?.secretHash, null);
    t.equal(updated?.updatedAt, 5);
    t.same(updated?.metadata.redirect_uris, ['https://new.example.com/cb']);
    t.equal(
      await storage.clients.update('cl_1', 1, {
        type: 'public',
        metadata,
        secretHash: null,
        secretIssuedAt: null,
        at: 6,
      }),
      null,
      'a stale revision changes nothing',
    );
    t.equal(
      await storage.clients.update('cl_nope', 1, {
        type: 'public',
        metadata,
        secretHash: null,
        secretIssuedAt: null,
        at: 6,
      }),
      null,
    );
    t.equal((await storage.clients.get('cl_1'))?.revision, 2);
  });

  t.test('client store: remove', async (t) => {
    const storage = await open();
    await storage.clients.insert(client('cl_1', null, 'https://one.example.com/cb'));
    t.equal(await storage.clients.remove('cl_1'), true);
    t.equal(await storage.clients.remove('cl_1'), false);
    t.equal(await storage.clients.get('cl_1'), null);
  });

  t.test('client store: a rolled-back transaction leaves no client', async (t) => {
    const storage = await open();
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.clients.insert(client('cl_1', null, 'https://one.example.com/cb'));
        throw new Error('abort');
      }),
    );
    t.equal(await storage.clients.get('cl_1'), null);
  });

  t.test('client store: a read after a write sees the write, in a transaction or not', async (t) => {
    // SQLite keeps the rows it read (one writer); every write must still show at once.
    const storage = await open();
    await storage.clients.insert(client('cl_1', null, 'https://one.example.com/cb'));
    t.equal((await storage.clients.get('cl_1'))?.revision, 1, 'read once');
    const change = {
      type: 'public' as const,
      metadata: validateClientMetadata({
        redirect_uris: ['https://new.example.com/cb'],
        token_endpoint_auth_method: 'none',
      }),
      secretHash: null,
      secretIssuedAt: null,
      at: 5,
    };
    await storage.transaction((tx) => tx.clients.update('cl_1', 1, change));
    const read = await storage.clients.get('cl_1');
    t.equal(read?.revision, 2, 'the committed update is read');
    t.same(read?.metadata.redirect_uris, ['https://new.example.com/cb']);
    read!.metadata.redirect_uris.push('https://changed-by-caller.example.com/cb');
    t.same(
      (await storage.clients.get('cl_1'))?.metadata.redirect_uris,
      ['https://new.example.com/cb'],
      'a record of its own',
    );
    await t.rejects(
      storage.transaction(async (tx) => {
        await tx.clients.update('cl_1', 2, { ...change, at: 6 });
        throw new Error('abort');
      }),
    );
    t.equal((await storage.clients.get('cl_1'))?.revision, 2, 'a rolled-back update is not read');
    t.equal(await storage.transaction((tx) => tx.clients.remove('cl_1')), true);
    t.equal(await storage.clients.get('cl_1'), null, 'a removed client is gone');
  });
}
