import type { Test } from 'tap';
import type { Storage, StoredRolloutDocument } from '../../../control-plane/src/storage/interface.js';

type Tap = Test;

function doc(kind: 'profile' | 'plan', project: string, version: number): StoredRolloutDocument {
  return {
    kind,
    project,
    version,
    document: { contract: 'x', project, nested: { list: [1, 2] } },
    jws: `h.p${version}.s`,
    hash: String(version).repeat(64).slice(0, 64),
    contentHash: `c${version}`.padEnd(64, '0'),
    kid: 'kid-1',
    createdAt: 1000 * version,
  };
}

/** Behaviour every RolloutStore backend must show. */
export function rolloutStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test(
    'rollout store: documents are versioned per kind and project, a version is written once, history is newest first',
    async (t) => {
      const storage = await open();
      t.equal(await storage.rollout.latestDocument('profile', 'shop'), null);
      t.equal(await storage.rollout.insertDocument(doc('profile', 'shop', 1)), true);
      t.equal(await storage.rollout.insertDocument(doc('profile', 'shop', 2)), true);
      t.equal(await storage.rollout.insertDocument(doc('plan', 'shop', 1)), true, 'plans are versioned apart');
      t.equal(await storage.rollout.insertDocument(doc('profile', 'blog', 1)), true);
      t.equal(
        await storage.rollout.insertDocument({ ...doc('profile', 'shop', 2), jws: 'other' }),
        false,
        'never two contents for one version',
      );
      t.same(await storage.rollout.latestDocument('profile', 'shop'), doc('profile', 'shop', 2), 'round-trips');
      t.same(
        (await storage.rollout.documentHistory('profile', 'shop')).map((d) => d.version),
        [2, 1],
      );
      t.same(await storage.rollout.latestDocument('plan', 'shop'), doc('plan', 'shop', 1));
    },
  );

  t.test('rollout store: a project binds one client, keeps its verification and attestation', async (t) => {
    const storage = await open();
    const created = await storage.rollout.ensureProject('shop', 5);
    t.same(created, {
      project: 'shop',
      clientId: null,
      verification: null,
      attestation: null,
      createdAt: 5,
      updatedAt: 5,
    });
    t.same(await storage.rollout.ensureProject('shop', 9), created, 'ensure keeps what exists');
    await storage.rollout.ensureProject('blog', 6);
    t.equal(await storage.rollout.bindClient('shop', 'cl_1', 10), true);
    t.equal(await storage.rollout.bindClient('shop', 'cl_1', 11), true, 'the same client again is fine');
    t.equal(await storage.rollout.bindClient('shop', 'cl_2', 12), false, 'another client is not bound over it');
    t.equal(await storage.rollout.bindClient('blog', 'cl_1', 12), false, 'a client belongs to one project');
    t.equal((await storage.rollout.projectOfClient('cl_1'))?.project, 'shop');
    t.equal(await storage.rollout.projectOfClient('cl_2'), null);
    const verification = {
      passed: true,
      at: 20,
      profileVersion: 1,
      configHash: null,
      checks: [{ name: 'pkce', ok: true, detail: 'refused' }],
    };
    await storage.rollout.recordVerification('shop', verification, 20);
    const attestation = {
      jws: 'a.b.c',
      hash: 'f'.repeat(64),
      at: 30,
      profileVersion: 1,
      configVersion: 2,
      configHash: 'e'.repeat(64),
    };
    await storage.rollout.recordAttestation('shop', attestation, 30);
    t.same(await storage.rollout.getProject('shop'), {
      project: 'shop',
      clientId: 'cl_1',
      verification,
      attestation,
      createdAt: 5,
      updatedAt: 30,
    });
    await storage.rollout.recordAttestation('shop', null, 31);
    t.equal((await storage.rollout.getProject('shop'))?.attestation, null);
    t.same(
      (await storage.rollout.listProjects()).map((p) => p.project),
      ['blog', 'shop'],
    );
    t.equal(await storage.rollout.getProject('none'), null);
  });
}
