import t from 'tap';
import { SamlKeyRing } from '../../../control-plane/src/saml/key-ring.js';
import { manualClock, openServices } from '../../helpers/build.js';

/**
 * The SAML RSA key ring: created on first use, sealed at rest, rotated like the ES256 ring, and
 * every certificate still in use kept in the metadata (retired ones until their retention ends).
 */
t.test('the SAML key ring rotates and keeps retired certificates listed while in use', async (t) => {
  const clock = manualClock();
  const { services } = await openServices(t, {
    now: clock.now,
    config: { 'keys.rotateEveryDays': 30, 'keys.retainRetiredDays': 7 },
  });
  const ring = new SamlKeyRing(services);
  t.same(await services.storage.saml.keys(), [], 'nothing is generated before first use');
  const first = await ring.current();
  t.match(first.privateKeyPem, /BEGIN PRIVATE KEY/);
  const stored = await services.storage.saml.keys();
  t.same(stored.map((k) => k.state).sort(), ['current', 'next'], 'a current and a published next key');
  for (const key of stored) t.notOk(key.sealedPrivateKey.toString('latin1').includes('PRIVATE KEY'), 'sealed at rest');
  t.same((await ring.certificates())[0], first.certificatePem, 'the current certificate comes first');

  const { retired, current } = await ring.rotate();
  t.equal(retired, first.kid);
  t.not(current, first.kid, 'the next key signs now');
  const listed = await ring.certificates();
  t.equal(listed.length, 3, 'current, next and the retired one');
  t.ok(listed.includes(first.certificatePem), 'the retired certificate is still in the metadata');

  clock.advance(8 * 86_400_000);
  // A second ring (another replica) reads the same storage and follows the schedule.
  const other = new SamlKeyRing(services);
  t.equal((await other.current()).kid, current);
  t.notOk((await other.certificates()).includes(first.certificatePem), 'dropped after its retention');

  clock.advance(31 * 86_400_000);
  t.not((await other.current()).kid, current, 'rotated on schedule');
});
