import type { Storage } from '../../../control-plane/src/storage/interface.js';

interface Tap {
  test(name: string, fn: (t: Tap) => Promise<void>): unknown;
  equal(a: unknown, b: unknown, message?: string): void;
  same(a: unknown, b: unknown, message?: string): void;
  ok(a: unknown, message?: string): void;
  notOk(a: unknown, message?: string): void;
}

const AT = Date.parse('2026-11-22T12:00:00Z');

async function withIdentity(storage: Storage, identityId: string): Promise<void> {
  await storage.identities.create({
    identityId,
    username: identityId,
    displayName: '',
    preferences: {},
    founder: false,
    createdAt: AT,
    updatedAt: AT,
  });
}

/** TOTP, recovery-code, email and link stores: one suite for every backend. */
export function secondFactorStoreConformance(t: Tap, open: () => Promise<Storage>): void {
  t.test('totp: pending, active, replay-safe steps, removal', async (t) => {
    const storage = await open();
    await withIdentity(storage, 'usr_a');
    const record = {
      identityId: 'usr_a',
      state: 'pending' as const,
      sealedSecret: Buffer.from('s1'),
      lastUsedStep: null,
      createdAt: AT,
      activatedAt: null,
    };
    t.equal(await storage.totp.get('usr_a'), null);
    t.equal(await storage.totp.putPending(record), true);
    t.equal(
      await storage.totp.putPending({ ...record, sealedSecret: Buffer.from('s2') }),
      true,
      'a pending setup is replaced',
    );
    t.same((await storage.totp.get('usr_a'))?.sealedSecret, Buffer.from('s2'));
    t.equal(await storage.totp.useStep('usr_a', 10), false, 'a pending secret records no steps');
    t.equal(await storage.totp.activate('usr_a', 100, AT + 1), true);
    t.equal(await storage.totp.activate('usr_a', 101, AT + 2), false, 'only a pending setup activates');
    const active = await storage.totp.get('usr_a');
    t.equal(active?.state, 'active');
    t.equal(active?.lastUsedStep, 100);
    t.equal(
      await storage.totp.putPending({ ...record, sealedSecret: Buffer.from('s3') }),
      false,
      'an active secret is never replaced by a setup',
    );
    t.same((await storage.totp.get('usr_a'))?.sealedSecret, Buffer.from('s2'));
    t.equal(await storage.totp.useStep('usr_a', 100), false, 'the same step twice is refused');
    t.equal(await storage.totp.useStep('usr_a', 99), false, 'an earlier step is refused');
    t.equal(await storage.totp.useStep('usr_a', 101), true);
    t.equal(await storage.totp.remove('usr_a'), true);
    t.equal(await storage.totp.remove('usr_a'), false);
    t.equal(await storage.totp.get('usr_a'), null);
  });

  t.test('recovery codes: replaced as a set, each consumed exactly once', async (t) => {
    const storage = await open();
    await withIdentity(storage, 'usr_b');
    await storage.recoveryCodes.replace(
      'usr_b',
      [
        { codeId: 'rc_1', codeHash: 'h1' },
        { codeId: 'rc_2', codeHash: 'h2' },
      ],
      AT,
    );
    t.same(
      (await storage.recoveryCodes.listUnused('usr_b')).map((c) => c.codeHash),
      ['h1', 'h2'],
    );
    const results = await Promise.all([1, 2, 3].map(() => storage.recoveryCodes.consume('usr_b', 'rc_1', AT + 1)));
    t.same(results.filter(Boolean).length, 1, 'exactly one consumer wins');
    t.equal(
      await storage.recoveryCodes.consume('usr_a_other', 'rc_2', AT),
      false,
      'another identity cannot consume it',
    );
    t.same(
      (await storage.recoveryCodes.listUnused('usr_b')).map((c) => c.codeId),
      ['rc_2'],
    );
    await storage.recoveryCodes.replace('usr_b', [{ codeId: 'rc_3', codeHash: 'h3' }], AT + 2);
    t.same(
      (await storage.recoveryCodes.listUnused('usr_b')).map((c) => c.codeId),
      ['rc_3'],
      'regenerating drops the old set',
    );
    t.equal(await storage.recoveryCodes.consume('usr_b', 'rc_2', AT + 3), false);
  });

  t.test('emails: one row per identity and address, verified by one account only', async (t) => {
    const storage = await open();
    await withIdentity(storage, 'usr_c');
    await withIdentity(storage, 'usr_d');
    const first = await storage.emails.add({
      emailId: 'eml_1',
      identityId: 'usr_c',
      email: 'ada@example.com',
      createdAt: AT,
      verifiedAt: null,
    });
    const again = await storage.emails.add({
      emailId: 'eml_2',
      identityId: 'usr_c',
      email: 'ada@example.com',
      createdAt: AT + 1,
      verifiedAt: null,
    });
    t.equal(again.emailId, first.emailId, 'adding twice returns the existing row');
    const other = await storage.emails.add({
      emailId: 'eml_3',
      identityId: 'usr_d',
      email: 'ada@example.com',
      createdAt: AT,
      verifiedAt: null,
    });
    t.equal(other.emailId, 'eml_3');
    t.equal(await storage.emails.findVerified('ada@example.com'), null);
    t.equal(await storage.emails.markVerified('eml_1', AT + 5), 'verified');
    t.equal(await storage.emails.markVerified('eml_1', AT + 6), 'already');
    t.equal(await storage.emails.markVerified('eml_3', AT + 7), 'taken');
    t.equal((await storage.emails.findVerified('ada@example.com'))?.identityId, 'usr_c');
    t.same(
      (await storage.emails.listByIdentity('usr_c')).map((e) => [e.email, e.verifiedAt]),
      [['ada@example.com', AT + 5]],
    );
    t.equal((await storage.emails.get('eml_3'))?.verifiedAt, null);
  });

  t.test('links: found by hash, consumed once and only before expiry, purged after', async (t) => {
    const storage = await open();
    await withIdentity(storage, 'usr_e');
    await storage.emails.add({
      emailId: 'eml_e',
      identityId: 'usr_e',
      email: 'e@example.com',
      createdAt: AT,
      verifiedAt: AT,
    });
    const link = {
      tokenHash: 'th1',
      purpose: 'signin' as const,
      identityId: 'usr_e',
      emailId: 'eml_e',
      deviceId: 'dev_1',
      createdAt: AT,
      expiresAt: AT + 600_000,
      usedAt: null,
    };
    await storage.links.insert(link);
    await storage.links.insert({ ...link, tokenHash: 'th2' });
    t.same(await storage.links.find('th1'), link);
    t.equal(await storage.links.find('nope'), null);
    t.equal(await storage.links.consume('th1', AT + 600_000), false, 'an expired link is not consumed');
    const results = await Promise.all([1, 2].map(() => storage.links.consume('th1', AT + 1000)));
    t.equal(results.filter(Boolean).length, 1);
    t.equal((await storage.links.find('th1'))?.usedAt, AT + 1000);
    t.equal(await storage.links.purgeExpired(AT + 600_001), 2);
    t.equal(await storage.links.find('th2'), null);
  });
}
