import t from 'tap';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { openSharedState } from '#lib/runtime/shared-state/index.js';
import { REDIS_URL, redisAvailability } from '../helpers/redis.js';
import { dpopClient, signAccessToken, startTestGateway, startUpstream } from './helpers.js';

const availability = await redisAvailability();

t.test(
  'a DPoP proof replayed at another gateway replica is caught through Redis',
  { skip: availability.run ? false : availability.reason },
  async (t) => {
    const prefix = `kp:gate:test:${randomUUID()}:`;
    // Two replicas, each with its own Redis connection, as two processes would have.
    const stateA = await openSharedState(REDIS_URL, prefix);
    const stateB = await openSharedState(REDIS_URL, prefix);
    t.teardown(async () => {
      await stateA.close();
      await stateB.close();
    });
    const upstream = await startUpstream(t);
    const policy = { mode: 'enforce' as const, routes: [{ path: '/', dpop: 'required' as const }] };
    const publicUrl = 'http://gate.example.test';
    const a = await startTestGateway(t, { upstream: upstream.url, policy, overrides: { publicUrl }, state: stateA });
    const b = await startTestGateway(t, { upstream: upstream.url, policy, overrides: { publicUrl }, state: stateB });
    const client = await dpopClient();
    const token = await signAccessToken({ audience: publicUrl, jkt: client.jkt });
    const proof = await client.proof('GET', `${publicUrl}/data`, token);
    const headers = { authorization: `DPoP ${token}`, dpop: proof };
    t.equal((await request(`${a.local}/data`, { headers })).statusCode, 200, 'accepted once at replica A');
    const replay = await request(`${b.local}/data`, { headers });
    t.equal(replay.statusCode, 401, 'replayed at replica B');
    t.match(await replay.body.json(), { reason: 'invalid_dpop_proof' });
  },
);

t.test(
  'one refresh per session across replicas sharing Redis',
  { skip: availability.run ? false : availability.reason },
  async (t) => {
    const { runSingleFlight } = await import('#lib/gateway-protocol/single-flight.js');
    const prefix = `kp:gate:test:${randomUUID()}:`;
    const replicas = [await openSharedState(REDIS_URL, prefix), await openSharedState(REDIS_URL, prefix)];
    t.teardown(async () => {
      for (const state of replicas) await state.close();
    });
    let calls = 0;
    const work = async () => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 100));
      return 'sealed-session-v2';
    };
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        runSingleFlight(replicas[i % 2]!, 'refresh:sid-1', work, {
          // Waiting is sized for a leader stalled on a loaded machine, not for a quiet one.
          lockMs: 30_000,
          waitMs: 20_000,
          resultMs: 60_000,
          pollMs: 10,
        }),
      ),
    );
    t.equal(calls, 1, 'the refresh ran once for 20 requests on two replicas');
    t.ok(
      results.every((r) => r.ok && r.value === 'sealed-session-v2'),
      'none of them is logged out',
    );
  },
);
