import t from 'tap';
import type { StoredSsfStream } from '../../../control-plane/src/storage/interface.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

/**
 * The operator's Shared Signals streams API (docs/events.md#shared-signals-streams-the-operators-view):
 * `GET /admin/ssf/streams`, `PATCH` and `DELETE /admin/ssf/streams/{streamId}`, through the
 * operations the console's streams section uses. The admin token or a console session; an
 * auditor reads only; an everyday session never; receipts name who acted.
 */
const ADMIN = 'ssf-admin-token-0123456789abcdef012345678';
const bearer = { authorization: `Bearer ${ADMIN}` };

function stream(streamId: string, clientId: string, now: number, more: Partial<StoredSsfStream> = {}): StoredSsfStream {
  return {
    streamId,
    clientId,
    delivery: 'poll',
    endpointUrl: null,
    authorizationSealed: null,
    eventsRequested: ['https://schemas.openid.net/secevent/caep/event-type/session-revoked'],
    description: null,
    status: 'enabled',
    statusReason: null,
    createdAt: now,
    updatedAt: now,
    ...more,
  };
}

async function setup(t: Parameters<typeof buildSignedIn>[0]) {
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { storage } = built.services;
  const now = Date.now();
  await storage.ssf.insertStream(stream('sst_a', 'cl_rx1', now));
  await storage.ssf.insertStream(
    stream('sst_b', 'cl_rx2', now, {
      delivery: 'push',
      endpointUrl: 'https://rx.example/events',
      authorizationSealed: Buffer.from('sealed'),
      description: 'pushes',
    }),
  );
  await storage.ssf.insertStream(stream('sst_c', 'cl_rx1', now, { status: 'paused', statusReason: 'by the rx' }));
  await storage.ssf.addSubject('sst_a', 'usr_one', now);
  await storage.ssf.addSubject('sst_a', 'usr_two', now);
  for (const [eventId, state] of [
    ['ev1', 'pending'],
    ['ev2', 'pending'],
    ['ev3', 'delivered'],
    ['ev4', 'dead'],
  ] as const)
    await storage.ssf.enqueue({
      eventId,
      streamId: 'sst_a',
      delivery: 'poll',
      set: '{}',
      createdAt: now,
      attempts: 0,
      nextAttemptAt: now,
      state,
      lastError: null,
      finishedAt: state === 'pending' ? null : now,
    });
  return built;
}

t.test('lists every receiver’s streams with client, status, delivery and counts, a page at a time', async (t) => {
  const { app } = await setup(t);
  const first = await app.inject({ method: 'GET', url: '/admin/ssf/streams?limit=2', headers: bearer });
  t.equal(first.statusCode, 200);
  const page = first.json();
  t.same(
    page.streams.map((s: { streamId: string }) => s.streamId),
    ['sst_a', 'sst_b'],
  );
  t.equal(page.next, 'sst_b');
  t.match(page.streams[0], {
    clientId: 'cl_rx1',
    status: 'enabled',
    delivery: 'poll',
    endpointUrl: null,
    counts: { subjects: 2, pending: 2, delivered: 1, dead: 1 },
  });
  t.match(page.streams[1], {
    clientId: 'cl_rx2',
    delivery: 'push',
    endpointUrl: 'https://rx.example/events',
    description: 'pushes',
    counts: { subjects: 0, pending: 0, delivered: 0, dead: 0 },
  });
  t.notOk('authorizationSealed' in page.streams[1], 'never the push Authorization value');
  const rest = (
    await app.inject({ method: 'GET', url: '/admin/ssf/streams?limit=2&after=sst_b', headers: bearer })
  ).json();
  t.match(rest, {
    ok: true,
    streams: [{ streamId: 'sst_c', status: 'paused', statusReason: 'by the rx' }],
    next: null,
  });
});

t.test('an everyday session gets 401, an auditor reads and is refused changes (403)', async (t) => {
  const { signIn, services } = await setup(t);
  const { browser: everyday } = await signIn({ username: 'ada', assurance: 'sensitive' });
  for (const [method, url] of [
    ['GET', '/admin/ssf/streams'],
    ['PATCH', '/admin/ssf/streams/sst_a'],
    ['DELETE', '/admin/ssf/streams/sst_a'],
  ] as const) {
    const res = await everyday.request(method, url, method === 'PATCH' ? { status: 'paused' } : undefined);
    t.equal(res.statusCode, 401, `${method} ${url}`);
    t.equal(res.json().reason, 'unauthorized');
  }
  const { browser: auditor } = await signIn({ username: 'bea', console: 'auditor', assurance: 'sensitive' });
  t.equal((await auditor.get('/admin/ssf/streams')).statusCode, 200, 'an auditor reads');
  for (const res of [
    await auditor.request('PATCH', '/admin/ssf/streams/sst_a', { status: 'paused' }),
    await auditor.request('DELETE', '/admin/ssf/streams/sst_a'),
  ]) {
    t.equal(res.statusCode, 403);
    t.equal(res.json().reason, 'forbidden');
  }
  t.match(await services.storage.ssf.getStream('sst_a'), { status: 'enabled' }, 'nothing changed');
});

t.test('an operator at sensitive pauses, enables, disables and deletes; receipts name the operator', async (t) => {
  const { signIn, services, app } = await setup(t);
  const { storage } = services;
  const { browser: low } = await signIn({ username: 'cyd', console: 'operator' });
  const weak = await low.request('PATCH', '/admin/ssf/streams/sst_a', { status: 'paused' });
  t.equal(weak.statusCode, 403);
  t.equal(weak.json().reason, 'insufficient_assurance');

  const { browser, identityId } = await signIn({ username: 'ada', console: 'operator', assurance: 'sensitive' });
  const paused = await browser.request('PATCH', '/admin/ssf/streams/sst_a', { status: 'paused' });
  t.equal(paused.statusCode, 200);
  t.match(paused.json(), { ok: true, streamId: 'sst_a', status: 'paused', statusReason: 'paused by the operator' });
  const receipt = JSON.parse((await storage.receipts.get(paused.json().receipt))!.body);
  t.match(receipt, {
    kind: 'ssf.stream_status_changed',
    streamId: 'sst_a',
    clientId: 'cl_rx1',
    actor: { type: 'person', id: identityId },
  });
  t.match(await storage.ssf.getStream('sst_a'), { status: 'paused', statusReason: 'paused by the operator' });

  const again = await browser.request('PATCH', '/admin/ssf/streams/sst_a', { status: 'paused' });
  t.equal(again.statusCode, 409, 'the status it has already');
  t.equal(again.json().reason, 'conflict');
  const bad = await browser.request('PATCH', '/admin/ssf/streams/sst_a', { status: 'gone' });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().reason, 'invalid_request');
  const none = await browser.request('PATCH', '/admin/ssf/streams/sst_none', { status: 'paused' });
  t.equal(none.statusCode, 404);
  t.match(none.json(), { ok: false, reason: 'not_found' });

  t.match((await browser.request('PATCH', '/admin/ssf/streams/sst_a', { status: 'enabled' })).json(), {
    status: 'enabled',
    statusReason: null,
  });
  // The admin token: the receipt says so.
  const disabled = await app.inject({
    method: 'PATCH',
    url: '/admin/ssf/streams/sst_a',
    headers: bearer,
    payload: { status: 'disabled' },
  });
  t.match(disabled.json(), { status: 'disabled', statusReason: 'disabled by the operator' });
  t.match(JSON.parse((await storage.receipts.get(disabled.json().receipt))!.body), { actor: { type: 'admin_token' } });

  const deleted = await browser.request('DELETE', '/admin/ssf/streams/sst_a');
  t.equal(deleted.statusCode, 200);
  t.match(JSON.parse((await storage.receipts.get(deleted.json().receipt))!.body), {
    kind: 'ssf.stream_deleted',
    streamId: 'sst_a',
    actor: { type: 'person', id: identityId },
  });
  t.equal(await storage.ssf.getStream('sst_a'), null);
  t.same(await storage.ssf.counts(['sst_a']), new Map(), 'nothing is left of it');
  const gone = await browser.request('DELETE', '/admin/ssf/streams/sst_a');
  t.equal(gone.statusCode, 404);
  t.match(gone.json(), { ok: false, reason: 'not_found' });
});
