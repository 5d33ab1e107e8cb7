import type { Test } from 'tap';
import { storedAgent } from '../../helpers/agents.js';
import type { Storage, StoredEnrollment } from '../../../control-plane/src/storage/interface.js';

function enrollment(id: string, extra: Partial<StoredEnrollment> = {}): StoredEnrollment {
  return {
    enrollmentId: id,
    name: 'bot',
    subjectKind: 'ai_agent',
    publicJwk: { kty: 'OKP', crv: 'Ed25519', x: 'x' },
    jkt: 'j'.repeat(43),
    alg: 'EdDSA',
    visibility: 'public',
    ownerCodeHash: 'c'.repeat(64),
    state: 'pending_approval',
    ownerId: null,
    approvedAt: null,
    agentId: null,
    createdAt: 0,
    expiresAt: 1000,
    ...extra,
  };
}

const agent = storedAgent;

/** Behaviour every AgentStore backend must show. */
export function agentStoreConformance(t: Test, open: () => Promise<Storage>): void {
  t.test('agent store: an enrollment is approved once, completed once, and never after its expiry', async (t) => {
    const { agents } = await open();
    await agents.insertEnrollment(enrollment('aen_1'));
    t.same(await agents.getEnrollment('aen_1'), enrollment('aen_1'), 'round-trips');
    t.equal(await agents.getEnrollment('aen_x'), null);
    t.equal(await agents.completeEnrollment('aen_1', 'agt_1', 10), false, 'not approved yet');
    t.equal(await agents.approveEnrollment('aen_1', 'usr_a', 1000), false, 'expired');
    t.equal(await agents.approveEnrollment('aen_1', 'usr_a', 10), true);
    t.equal(await agents.approveEnrollment('aen_1', 'usr_b', 11), false, 'approved once');
    t.same(
      (await agents.listApprovedEnrollments('usr_a', 12)).map((e) => e.enrollmentId),
      ['aen_1'],
    );
    t.same(await agents.listApprovedEnrollments('usr_b', 12), []);
    t.equal(await agents.completeEnrollment('aen_1', 'agt_1', 1000), false, 'expired');
    t.equal(await agents.completeEnrollment('aen_1', 'agt_1', 20), true);
    t.equal(await agents.completeEnrollment('aen_1', 'agt_2', 21), false, 'one use');
    const done = await agents.getEnrollment('aen_1');
    t.equal(done?.state, 'completed');
    t.equal(done?.agentId, 'agt_1');
    t.equal(done?.ownerId, 'usr_a');
  });

  t.test('agent store: agents round-trip, list by owner, and update only from the expected state', async (t) => {
    const { agents } = await open();
    await agents.insertAgent(agent('agt_1'));
    await agents.insertAgent(agent('agt_2', { ownerId: 'usr_b', createdAt: 2 }));
    t.same(await agents.get('agt_1'), agent('agt_1'));
    t.same(await agents.getByProofId('p-agt_2'), agent('agt_2', { ownerId: 'usr_b', createdAt: 2 }));
    t.equal(await agents.getByProofId('nope'), null);
    t.same(
      (await agents.listByOwner('usr_a')).map((a) => a.agentId),
      ['agt_1'],
    );
    t.same(
      (await agents.listPage({ after: null, limit: 1 })).map((a) => a.agentId),
      ['agt_1'],
      'every agent by id, a page at a time',
    );
    t.same(
      (await agents.listPage({ after: 'agt_1', limit: 5 })).map((a) => a.agentId),
      ['agt_2'],
    );
    t.equal(
      await agents.update(agent('agt_1', { state: 'suspended', declared: { a2aCardUrl: 'https://a' } }), 'suspended'),
      false,
      'stale state',
    );
    t.equal(
      await agents.update(
        agent('agt_1', { state: 'suspended', declared: { a2aCardUrl: 'https://a' }, resumeNeedsKey: true }),
        'active',
      ),
      true,
    );
    const updated = await agents.get('agt_1');
    t.equal(updated?.state, 'suspended');
    t.equal(updated?.resumeNeedsKey, true);
    t.same(updated?.declared, { a2aCardUrl: 'https://a' });
    await agents.recordProof('agt_1', 50);
    await agents.recordProof('agt_1', 40);
    t.equal((await agents.get('agt_1'))?.lastProofAt, 50, 'the newest proof stays');
  });

  t.test('agent store: evidence is appended in order', async (t) => {
    const { agents } = await open();
    await agents.appendEvidence({
      agentId: 'agt_1',
      type: 'domain-control',
      at: 1,
      expiresAt: 2,
      detail: { domain: 'a.example' },
    });
    await agents.appendEvidence({
      agentId: 'agt_1',
      type: 'descriptor-integrity',
      at: 3,
      expiresAt: 4,
      detail: { url: 'https://a', sha256: 'f' },
    });
    t.same(
      (await agents.listEvidence('agt_1')).map((e) => e.type),
      ['domain-control', 'descriptor-integrity'],
    );
    t.same(await agents.listEvidence('agt_2'), []);
  });

  t.test(
    'agent store: a transfer is consumed once, by the named identity with the right code, before expiry',
    async (t) => {
      const { agents } = await open();
      const transfer = {
        agentId: 'agt_1',
        fromOwnerId: 'usr_a',
        toIdentityId: 'usr_b',
        codeHash: 'h1',
        createdAt: 0,
        expiresAt: 100,
      };
      await agents.putTransfer(transfer);
      t.same(await agents.getTransfer('agt_1'), transfer);
      t.equal(await agents.consumeTransfer('agt_1', 'h1', 'usr_c', 10), false, 'someone else');
      t.equal(await agents.consumeTransfer('agt_1', 'h2', 'usr_b', 10), false, 'wrong code');
      t.equal(await agents.consumeTransfer('agt_1', 'h1', 'usr_b', 100), false, 'expired');
      t.equal(await agents.consumeTransfer('agt_1', 'h1', 'usr_b', 10), true);
      t.equal(await agents.consumeTransfer('agt_1', 'h1', 'usr_b', 10), false, 'once');
      await agents.putTransfer(transfer);
      await agents.putTransfer({ ...transfer, codeHash: 'h3' });
      t.equal((await agents.getTransfer('agt_1'))?.codeHash, 'h3', 'a new transfer replaces the old');
      await agents.deleteTransfer('agt_1');
      t.equal(await agents.getTransfer('agt_1'), null);
    },
  );

  t.test('agent store: grants are revoked one by one or all at once', async (t) => {
    const { agents } = await open();
    const grant = {
      grantId: 'agg_1',
      agentId: 'agt_1',
      ownerId: 'usr_a',
      clientId: 'cl_1',
      resource: null,
      scope: 'read',
      createdAt: 1,
      revokedAt: null,
    };
    await agents.insertGrant(grant);
    await agents.insertGrant({ ...grant, grantId: 'agg_2', resource: 'https://api.example' });
    t.same(await agents.getGrant('agg_1'), grant);
    t.equal(await agents.getGrant('agg_x'), null);
    t.equal(await agents.revokeGrant('agg_1', 5), true);
    t.equal(await agents.revokeGrant('agg_1', 6), false);
    t.equal(await agents.revokeGrants('agt_1', 7), 1, 'only the live one');
    t.same(
      (await agents.listGrants('agt_1')).map((g) => g.revokedAt),
      [5, 7],
    );
  });
}
