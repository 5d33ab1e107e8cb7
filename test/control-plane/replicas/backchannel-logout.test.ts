import t from 'tap';
import { decodeJwt } from 'jose';
import { build } from '../../helpers/build.js';
import { ADMIN, registerClient } from '../../helpers/oidc.js';
import { createTestDatabase, postgresAvailability } from '../../helpers/postgres.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['clients', 'oidc'] as const;

/**
 * Two control planes on one PostgreSQL deliver the same back-channel logout outbox: each row is
 * leased by one of them (FOR UPDATE SKIP LOCKED), so every logout token is sent exactly once.
 */

const postgres = await postgresAvailability();

t.test(
  'two replicas deliver each queued logout token once',
  { skip: postgres.run ? false : postgres.reason },
  async (t) => {
    const tls = makeTestCa(t);
    const jtis: string[] = [];
    const rp = await startHttpsServer(t, tls, (req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        jtis.push(String(decodeJwt(new URLSearchParams(body).get('logout_token')!).jti));
        res.end();
      });
    });
    const databaseUrl = await createTestDatabase(t);
    const config = {
      databaseUrl,
      adminToken: ADMIN,
      'database.poolSize': 4,
      'fetch.allowPrivateTargets': true,
      'fetch.caFile': tls.caFile,
      // Rounds only when a test asks: the polls would race the two calls below.
      'oidc.backchannelLogout.pollIntervalMs': 60_000,
    };
    const a = await build(t, { areas, config });
    const b = await build(t, { areas, config });
    const client = await registerClient(a.app, { backchannel_logout_uri: `${rp.origin}/logout` });
    const now = a.services.now();
    const count = 50;
    for (let i = 0; i < count; i++) {
      await a.services.storage.logouts.enqueue({
        logoutId: `bcl_${i}`,
        clientId: client.client_id,
        identityId: `usr_${i}`,
        sessionId: `ses_${i}`,
        jti: `jti-${i}`,
        createdAt: now,
        attempts: 0,
        nextAttemptAt: now,
        state: 'pending',
        lastError: null,
        finishedAt: null,
      });
    }
    const [byA, byB] = await Promise.all([
      a.services.backchannelLogout.deliverDue(),
      b.services.backchannelLogout.deliverDue(),
    ]);
    t.ok(byA + byB >= count, 'every row attempted');
    // A busy machine may time a delivery out and retry it: then a token can arrive twice, with its
    // row saying so. What must never happen is two replicas sending a row in one attempt.
    const rows = await Promise.all(Array.from({ length: count }, (_, i) => a.services.storage.logouts.get(`bcl_${i}`)));
    t.equal(
      rows.reduce((sum, row) => sum + row!.attempts, 0),
      byA + byB,
      "each attempt is one replica's: no row was attempted by both at once",
    );
    for (const row of rows) {
      const sent = jtis.filter((jti) => jti === row!.jti).length;
      t.ok(sent <= row!.attempts, `${row!.logoutId}: sent ${sent} times in ${row!.attempts} attempts`);
      if (row!.attempts === 1 && row!.state === 'delivered') t.equal(sent, 1, `${row!.logoutId}: sent once`);
    }
    t.ok(rows.filter((row) => row!.state === 'delivered').length > 0, 'deliveries happened on this machine');
  },
);
