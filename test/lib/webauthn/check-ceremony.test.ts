import t from 'tap';
import {
  checkAssertion,
  checkAttestation,
  checkAuthenticatorData,
  checkOrigin,
  readCredentialResponse,
} from '#lib/webauthn/check-ceremony.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { reasonOf } from '../../helpers/reason-of.js';

const ORIGIN = 'http://localhost:4400';

t.test('reads client data and checks origins as a list', async (t) => {
  const a = new SoftAuthenticator(ORIGIN);
  const created = a.create({ rp: { id: 'localhost' }, user: { id: 'dXNy' }, challenge: 'Y2hhbGxlbmdl' });
  const read = readCredentialResponse(created, 'webauthn.create');
  t.match(read.clientData, { type: 'webauthn.create', challenge: 'Y2hhbGxlbmdl', origin: ORIGIN, crossOrigin: false });
  t.doesNotThrow(() => checkOrigin(read.clientData, ['https://rp.example', ORIGIN]));
  t.equal(
    reasonOf(() => checkOrigin(read.clientData, ['https://rp.example'])),
    'webauthn_origin_mismatch',
  );
  t.equal(
    reasonOf(() => checkOrigin({ ...read.clientData, topOrigin: 'https://evil.example' }, [ORIGIN])),
    'webauthn_origin_mismatch',
  );
  t.equal(
    reasonOf(() => readCredentialResponse(created, 'webauthn.get')),
    'webauthn_malformed',
    'wrong ceremony type',
  );
  for (const bad of [
    null,
    'x',
    { type: 'public-key' },
    { type: 'other', id: 'a', rawId: 'a' },
    { type: 'public-key', id: 'a', rawId: 'a', response: { clientDataJSON: 'bm90IGpzb24' } },
  ]) {
    t.equal(
      reasonOf(() => readCredentialResponse(bad, 'webauthn.create')),
      'webauthn_malformed',
      JSON.stringify(bad),
    );
  }
});

t.test('checks RP ID hash, presence and verification, and the counter', async (t) => {
  const a = new SoftAuthenticator(ORIGIN);
  a.create({ rp: { id: 'localhost' }, user: { id: 'dXNy' }, challenge: 'AA' });
  const fields = (tweaks = {}) => a.get({ challenge: 'AA' }, tweaks).response as Record<string, unknown>;
  const good = fields();
  t.match(checkAssertion(good, 'localhost', 0), { counter: 1, backupEligible: true, backedUp: true });
  t.equal(
    reasonOf(() => checkAssertion(fields(), 'example.com', 0)),
    'webauthn_rp_mismatch',
  );
  t.equal(
    reasonOf(() => checkAssertion(fields({ noUserVerification: true }), 'localhost', 0)),
    'user_verification_required',
  );
  t.equal(
    reasonOf(() => checkAssertion(fields({ counter: 5 }), 'localhost', 5)),
    'credential_counter_regressed',
  );
  t.equal(
    checkAssertion(fields({ counter: 0 }), 'localhost', 0).counter,
    0,
    'authenticators without counters (both zero) pass',
  );
  t.equal(
    reasonOf(() => checkAuthenticatorData(new Uint8Array(10) as never, 'localhost')),
    'webauthn_malformed',
  );
});

t.test('checks a registration: attestation, RP ID hash, user verification', async (t) => {
  const a = new SoftAuthenticator(ORIGIN);
  const options = { rp: { id: 'localhost' }, user: { id: 'dXNy' }, challenge: 'AA' };
  const fields = (tweaks = {}) => a.create(options, tweaks).response as Record<string, unknown>;
  t.match(checkAttestation(fields(), 'localhost'), { credentialId: String });
  t.equal(
    reasonOf(() => checkAttestation(fields(), 'example.com')),
    'webauthn_rp_mismatch',
  );
  t.equal(
    reasonOf(() => checkAttestation(fields({ rpId: 'example.com' }), 'localhost')),
    'webauthn_rp_mismatch',
    'signed for another RP ID',
  );
  t.equal(
    reasonOf(() => checkAttestation(fields({ noUserVerification: true }), 'localhost')),
    'user_verification_required',
  );
  t.equal(
    reasonOf(() => checkAttestation({ ...fields(), attestationObject: 'AAAA' }, 'localhost')),
    'webauthn_malformed',
    'not CBOR',
  );
  t.equal(
    reasonOf(() => checkAttestation({ ...fields(), attestationObject: 'not base64url!' }, 'localhost')),
    'webauthn_malformed',
  );
  t.equal(
    reasonOf(() => checkAttestation({}, 'localhost')),
    'webauthn_malformed',
    'no attestationObject',
  );
});

t.test('refuses a cross-origin ceremony', async (t) => {
  const a = new SoftAuthenticator(ORIGIN);
  const read = readCredentialResponse(
    a.create({ rp: { id: 'localhost' }, user: { id: 'dXNy' }, challenge: 'AA' }, { crossOrigin: true }),
    'webauthn.create',
  );
  t.equal(
    reasonOf(() => checkOrigin(read.clientData, [ORIGIN])),
    'webauthn_origin_mismatch',
  );
});
