import type { Test } from 'tap';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import type {
  SsfEvent,
  Storage,
  StoredClient,
  StoredGrant,
  StoredSsfStream,
} from '../../../control-plane/src/storage/interface.js';
import { identity } from './fixtures/accounts.js';

const stream = (streamId: string, clientId: string, delivery: 'push' | 'poll' = 'push'): StoredSsfStream => ({
  streamId,
  clientId,
  delivery,
  endpointUrl: delivery === 'push' ? `https://rx.example/${streamId}` : null,
  authorizationSealed: null,
  eventsRequested: ['https://schemas.openid.net/secevent/risc/event-type/account-disabled'],
  description: null,
  status: 'enabled',
  statusReason: null,
  createdAt: 1000,
  updatedAt: 1000,
});

const event = (eventId: string, streamId: string, delivery: 'push' | 'poll', at = 1000): SsfEvent => ({
  eventId,
  streamId,
  delivery,
  set: `set-of-${eventId}`,
  createdAt: at,
  attempts: 0,
  nextAttemptAt: at,
  state: 'pending',
  lastError: null,
  finishedAt: null,
});

const client = (clientId: string, ownerId: string | null): StoredClient => ({
  clientId,
  type: 'confidential',
  metadata: validateClientMetadata({ redirect_uris: [`https://${clientId}.example/cb`] }),
  secretHash: 'a'.repeat(64),
  secretIssuedAt: 1,
  ownerId,
  registrationTokenHash: 'b'.repeat(64),
  revision: 1,
  createdAt: 1,
  updatedAt: 1,
});

const grant = (grantId: string, identityId: string, clientId: string, scope = 'openid'): StoredGrant => ({
  grantId,
  clientId,
  identityId,
  sessionId: 'ses_1',
  scope,
  resource: null,
  assurance: 'passkey',
  amr: ['pop'],
  authTime: 1000,
  createdAt: 1000,
  expiresAt: 100_000,
  revokedAt: null,
  offline: false,
});

/** The Shared Signals store, for every backend (docs/events.md#shared-signals-streams-from-a-receivers-view). */
export function ssfStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('ssf store: an account is a subject only of streams whose client knows it', async (t) => {
    const storage = await open();
    for (const [id, name] of [
      ['usr_granted', 'granted'],
      ['usr_managed', 'managed'],
      ['usr_stranger', 'stranger'],
    ] as const)
      await storage.identities.create({
        ...identity(id, name),
        ...(id === 'usr_managed' ? { managedBy: 'org_1' } : {}),
      });
    await storage.clients.insert(client('cl_op', null));
    await storage.clients.insert(client('cl_org', 'org_1'));
    await storage.ssf.insertStream(stream('sst_op', 'cl_op'));
    await storage.ssf.insertStream(stream('sst_org', 'cl_org', 'poll'));
    await storage.oidc.insertGrant(grant('gr_1', 'usr_granted', 'cl_op', 'openid email'));

    t.equal(await storage.ssf.mayBeSubject('usr_granted', 'cl_op', 2000), true, 'a live grant');
    t.equal(await storage.ssf.mayBeSubject('usr_granted', 'cl_org', 2000), false);
    t.equal(await storage.ssf.mayBeSubject('usr_managed', 'cl_org', 2000), true, "managed by the client's org");
    t.equal(await storage.ssf.mayBeSubject('usr_stranger', 'cl_op', 2000), false);
    t.equal(await storage.ssf.mayBeSubject('usr_nobody', 'cl_op', 2000), false);
    await storage.oidc.recordApproval('usr_stranger', 'cl_op', { scopes: ['openid'], resources: [] }, 1000);
    t.equal(await storage.ssf.mayBeSubject('usr_stranger', 'cl_op', 2000), true, 'an approval');

    t.same(await storage.ssf.subjectStreams('usr_granted', 2000), [], 'not added: no stream');
    await storage.ssf.addSubject('sst_op', 'usr_granted', 2000);
    await storage.ssf.addSubject('sst_op', 'usr_granted', 2001);
    await storage.ssf.addSubject('sst_org', 'usr_managed', 2000);
    t.same(
      (await storage.ssf.subjectStreams('usr_granted', 2000)).map((s) => [s.stream.streamId, s.email]),
      [['sst_op', true]],
      'the grant names email',
    );
    t.same(
      (await storage.ssf.subjectStreams('usr_managed', 2000)).map((s) => [s.stream.streamId, s.email]),
      [['sst_org', false]],
    );
    // A revoked grant still counts until its absolute end: its revocation is what the receiver hears of.
    await storage.oidc.revokeGrant('gr_1', 3000);
    t.equal((await storage.ssf.subjectStreams('usr_granted', 4000)).length, 1);
    t.equal(await storage.ssf.mayBeSubject('usr_granted', 'cl_op', 4000), false, 'but adds need a live one');
    t.equal((await storage.ssf.subjectStreams('usr_granted', 200_000)).length, 0, 'past its end: nothing');
    // A paused stream hears nothing.
    await storage.ssf.updateStream({ ...stream('sst_op', 'cl_op'), status: 'paused', updatedAt: 5000 });
    t.equal((await storage.ssf.subjectStreams('usr_granted', 4000)).length, 0);
    t.same(
      (await storage.ssf.listEnabled()).map((s) => s.streamId),
      ['sst_org'],
    );
    await storage.ssf.removeSubject('sst_org', 'usr_managed');
    t.same(await storage.ssf.subjectStreams('usr_managed', 2000), []);
    await storage.ssf.addSubject('sst_org', 'usr_managed', 2000);
    await storage.ssf.forgetSubject('usr_managed');
    t.same(await storage.ssf.subjectStreams('usr_managed', 2000), []);
  });

  t.test("ssf store: every receiver's streams a page at a time, by stream id", async (t) => {
    const storage = await open();
    for (const [id, clientId] of [
      ['sst_c', 'cl_a'],
      ['sst_a', 'cl_b'],
      ['sst_b', 'cl_a'],
    ] as const)
      await storage.ssf.insertStream(stream(id, clientId));
    const ids = async (after: string | null) =>
      (await storage.ssf.listPage({ after, limit: 2 })).map((s) => `${s.streamId}:${s.clientId}`);
    t.same(await ids(null), ['sst_a:cl_b', 'sst_b:cl_a']);
    t.same(await ids('sst_b'), ['sst_c:cl_a']);
    t.same(await ids('sst_c'), []);
  });

  t.test('ssf store: counts a page of streams’ subjects and events by state', async (t) => {
    const storage = await open();
    await storage.ssf.insertStream(stream('sst_a', 'cl_a', 'poll'));
    await storage.ssf.insertStream(stream('sst_b', 'cl_a'));
    await storage.ssf.addSubject('sst_a', 'usr_1', 1000);
    await storage.ssf.addSubject('sst_a', 'usr_2', 1000);
    await storage.ssf.enqueue(event('ev_1', 'sst_a', 'poll'));
    await storage.ssf.enqueue({ ...event('ev_2', 'sst_a', 'poll'), state: 'delivered', finishedAt: 1001 });
    await storage.ssf.enqueue({ ...event('ev_3', 'sst_a', 'poll'), state: 'dead', finishedAt: 1001 });
    await storage.ssf.enqueue({ ...event('ev_4', 'sst_a', 'poll'), state: 'dead', finishedAt: 1001 });
    const counts = await storage.ssf.counts(['sst_a', 'sst_b', 'sst_none']);
    t.same(Object.fromEntries(counts), {
      sst_a: { subjects: 2, pending: 1, delivered: 1, dead: 2 },
      sst_b: { subjects: 0, pending: 0, delivered: 0, dead: 0 },
    });
    t.same(await storage.ssf.counts([]), new Map(), 'no streams asked, none answered');
  });

  t.test('ssf store: push events are leased to one holder; poll events wait for their ack', async (t) => {
    const storage = await open();
    await storage.ssf.insertStream(stream('sst_push', 'cl_a'));
    await storage.ssf.insertStream(stream('sst_poll', 'cl_a', 'poll'));
    await storage.ssf.enqueue(event('set_1', 'sst_push', 'push'));
    for (const id of ['set_2', 'set_3', 'set_4']) await storage.ssf.enqueue(event(id, 'sst_poll', 'poll'));
    const claimed = await storage.ssf.claimDue(2000, 'a', 62_000, 10);
    t.same(
      claimed.map((e) => e.eventId),
      ['set_1'],
      'only push events are claimed',
    );
    t.same(await storage.ssf.claimDue(2000, 'b', 62_000, 10), [], 'leased once');
    t.same(await storage.ssf.backlog(), { pending: 1, oldestCreatedAt: 1000 });
    const update = { state: 'delivered' as const, attempts: 1, nextAttemptAt: 1000, lastError: null, finishedAt: 2000 };
    t.equal(await storage.ssf.finish('set_1', 'b', update), false, 'not its holder');
    t.equal(await storage.ssf.finish('set_1', 'a', update), true);

    const first = await storage.ssf.pollable('sst_poll', 2);
    t.same(
      first.events.map((e) => [e.eventId, e.set]),
      [
        ['set_2', 'set-of-set_2'],
        ['set_3', 'set-of-set_3'],
      ],
    );
    t.equal(first.more, true);
    await storage.ssf.acknowledge('sst_push', ['set_2'], 3000);
    t.equal((await storage.ssf.pollable('sst_poll', 10)).events.length, 3, "another stream's ack does nothing");
    await storage.ssf.acknowledge('sst_poll', ['set_2', 'set_3', 'set_nope'], 3000);
    t.same(await storage.ssf.pollable('sst_poll', 10), {
      events: [{ ...event('set_4', 'sst_poll', 'poll') }],
      more: false,
    });
    t.equal(await storage.ssf.purge(10_000, 0), 3, 'finished events go');
    t.equal(await storage.ssf.purge(0, 10_000), 1, 'and poll events never acknowledged');
    t.equal(await storage.ssf.removeStream('sst_poll'), true);
    t.equal(await storage.ssf.removeStream('sst_poll'), false);
    t.same(
      (await storage.ssf.listStreams('cl_a')).map((s) => s.streamId),
      ['sst_push'],
    );
  });
}
