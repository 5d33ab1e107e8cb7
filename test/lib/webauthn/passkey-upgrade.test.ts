import t from 'tap';
import { PASSKEY_UPGRADE_ASK_AGAIN_MS, shouldOfferPasskeyUpgrade } from '#lib/webauthn/passkey-upgrade.js';

const NOW = Date.UTC(2026, 11, 7);
const signedIn = { authTime: NOW - 1000, passkeysCreatedAt: [NOW - 86_400_000], declinedAt: null, now: NOW };

t.test('a sign-in without a passkey is offered one', async (t) => {
  t.equal(shouldOfferPasskeyUpgrade({ ...signedIn, amr: ['email'] }), true, 'magic link');
  t.equal(shouldOfferPasskeyUpgrade({ ...signedIn, amr: ['otp'] }), true, 'recovery code');
  t.equal(shouldOfferPasskeyUpgrade({ ...signedIn, amr: ['fed'], passkeysCreatedAt: [] }), true, 'a connection');
});

t.test('a passkey sign-in, or a passkey made since, is not offered one', async (t) => {
  t.equal(shouldOfferPasskeyUpgrade({ ...signedIn, amr: ['pop', 'user'] }), false);
  t.equal(shouldOfferPasskeyUpgrade({ ...signedIn, amr: ['email', 'pop'] }), false, 'stepped up with a passkey');
  t.equal(shouldOfferPasskeyUpgrade({ ...signedIn, amr: ['email'], passkeysCreatedAt: [NOW - 10] }), false);
});

t.test('a declined offer comes back after a month, not before', async (t) => {
  const declined = (ago: number) => shouldOfferPasskeyUpgrade({ ...signedIn, amr: ['email'], declinedAt: NOW - ago });
  t.equal(declined(60_000), false, 'a minute ago');
  t.equal(declined(PASSKEY_UPGRADE_ASK_AGAIN_MS - 1), false, 'just under a month ago');
  t.equal(declined(PASSKEY_UPGRADE_ASK_AGAIN_MS), true, 'a month ago');
});
