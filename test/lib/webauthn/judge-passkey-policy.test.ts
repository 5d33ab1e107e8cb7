import t from 'tap';
import { reasonOf } from '../../helpers/reason-of.js';
import {
  judgePasskeyAtSignIn,
  judgePasskeyPolicy,
  readPasskeyPolicy,
  type AuthenticatorFacts,
} from '#lib/webauthn/judge-passkey-policy.js';

const A = '2fc0579f-8113-47ea-b116-bb5a8db9202a';
const B = 'ee882879-721c-4913-9775-3dfcce97072a';
const facts = (over: Partial<AuthenticatorFacts> = {}): AuthenticatorFacts => ({
  aaguid: A,
  attested: false,
  metadataStatus: null,
  ...over,
});

t.test('reads a policy: lists folded and sorted, aaguids_allowed implies required attestation', async (t) => {
  t.same(readPasskeyPolicy({}), { aaguidsAllowed: [], aaguidsDenied: [], attestation: 'none' });
  t.same(readPasskeyPolicy({ aaguids_allowed: [B.toUpperCase(), A, A] }), {
    aaguidsAllowed: [A, B],
    aaguidsDenied: [],
    attestation: 'required',
  });
  t.equal(readPasskeyPolicy({ aaguids_allowed: [A], attestation: 'none' }).attestation, 'required');
  t.equal(readPasskeyPolicy({ attestation: 'required' }).attestation, 'required');
});

t.test('refuses a malformed policy', async (t) => {
  for (const bad of [
    { aaguids_denied: ['not-a-uuid'] },
    { aaguids_denied: 'x' },
    { aaguids_allowed: [A], aaguids_denied: [A] },
    { attestation: 'direct' },
    { aaguids_denied: Array.from({ length: 501 }, () => A) },
  ])
    t.equal(
      reasonOf(() => readPasskeyPolicy(bad)),
      'invalid_request',
      JSON.stringify(bad).slice(0, 60),
    );
});

t.test('judges the metadata status, then denied, then allowed, then attestation', async (t) => {
  const none = readPasskeyPolicy({});
  t.same(judgePasskeyPolicy(none, facts()), { allowed: true }, 'an empty policy allows');
  t.match(judgePasskeyPolicy(none, facts({ metadataStatus: 'revoked' })), { allowed: false, why: 'revoked' });
  const deny = readPasskeyPolicy({ aaguids_denied: [A] });
  t.match(judgePasskeyPolicy(deny, facts()), { allowed: false, why: 'denied', explanation: /denies/ });
  t.same(judgePasskeyPolicy(deny, facts({ aaguid: B })), { allowed: true });
  const allow = readPasskeyPolicy({ aaguids_allowed: [A] });
  t.match(judgePasskeyPolicy(allow, facts({ aaguid: B, attested: true })), { why: 'not_allowed' });
  t.match(judgePasskeyPolicy(allow, facts({ aaguid: null, attested: true })), { why: 'not_allowed' });
  t.match(
    judgePasskeyPolicy(allow, facts({ aaguid: '00000000-0000-0000-0000-000000000000', attested: true })),
    { why: 'not_allowed' },
    'all zeros names no authenticator',
  );
  t.match(
    judgePasskeyPolicy(allow, facts()),
    { why: 'attestation_required' },
    'an AAGUID without a statement is a claim',
  );
  t.same(judgePasskeyPolicy(allow, facts({ attested: true })), { allowed: true });
  t.match(
    judgePasskeyPolicy(allow, facts({ attested: true, metadataStatus: 'compromised' })),
    { why: 'compromised' },
    'no list allows a compromised authenticator',
  );
});

t.test('at sign-in, passkeys older than the policy keep working until the grace ends', async (t) => {
  const policy = readPasskeyPolicy({ aaguids_denied: [A] });
  const grace = { effectiveAt: 1000, graceUntil: 5000 };
  t.same(judgePasskeyAtSignIn(policy, grace, facts(), { createdAt: 500 }, 2000), {
    allowed: true,
    graceUntil: 5000,
    why: 'denied',
  });
  t.match(judgePasskeyAtSignIn(policy, grace, facts(), { createdAt: 500 }, 5000), { allowed: false, why: 'denied' });
  t.match(
    judgePasskeyAtSignIn(policy, grace, facts(), { createdAt: 1500 }, 2000),
    { allowed: false },
    'a passkey registered since was judged at registration',
  );
  t.match(
    judgePasskeyAtSignIn(policy, grace, facts({ aaguid: B, metadataStatus: 'compromised' }), { createdAt: 500 }, 2000),
    { allowed: false, why: 'compromised' },
    'no grace for a compromised authenticator',
  );
  t.same(judgePasskeyAtSignIn(policy, grace, facts({ aaguid: B }), { createdAt: 500 }, 2000), { allowed: true });
});
