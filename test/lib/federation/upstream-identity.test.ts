import t from 'tap';
import {
  checkTenant,
  directoryKeys,
  federatedAmr,
  federatedAssurance,
  isMultiTenantIssuer,
  upstreamSubject,
} from '#lib/federation/upstream-identity.js';

t.test('multi-tenant issuers: Google and the shared Entra endpoints', async (t) => {
  for (const issuer of [
    'https://accounts.google.com',
    'https://login.microsoftonline.com/common/v2.0',
    'https://login.microsoftonline.com/organizations/v2.0',
    'https://login.microsoftonline.com/{tenantid}/v2.0',
  ])
    t.equal(isMultiTenantIssuer(issuer), true, issuer);
  for (const issuer of [
    'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0',
    'https://idp.acme.example',
    'https://accounts.google.com.evil.example',
  ])
    t.equal(isMultiTenantIssuer(issuer), false, issuer);
});

t.test('a pinned tenant must be the ID token’s own', async (t) => {
  t.same(checkTenant({ hd: 'acme.example' }, { hd: 'acme.example' }), { ok: true });
  t.equal(checkTenant({}, { hd: 'acme.example' }).ok, false, 'a personal Google account has no hd');
  t.equal(checkTenant({ tid: 'other' }, { tid: 'acme' }).ok, false);
  t.same(checkTenant({ sub: 'x' }, undefined), { ok: true });
});

t.test('the identity key is the subject (Entra: tid + oid), never an address', async (t) => {
  t.equal(upstreamSubject('https://idp.acme.example', { sub: 'abc', email: 'a@acme.example' }), 'abc');
  t.equal(
    upstreamSubject('https://login.microsoftonline.com/acme-tid/v2.0', { sub: 'pairwise', tid: 'acme-tid', oid: 'o1' }),
    'acme-tid/o1',
  );
  t.equal(upstreamSubject('https://idp.acme.example', { email: 'a@acme.example' }), null);
});

t.test('a federated sign-in reaches email, or passkey only when allowed and phishing-resistant', async (t) => {
  t.equal(federatedAssurance({ amr: ['hwk', 'user'] }), 'email', 'not allowed by the operator');
  t.equal(federatedAssurance({ amr: ['hwk', 'user'] }, 'passkey'), 'passkey');
  t.equal(federatedAssurance({ amr: ['swk', 'pin'] }, 'passkey'), 'passkey');
  t.equal(federatedAssurance({ amr: ['fido'] }, 'passkey'), 'passkey', 'Entra');
  t.equal(federatedAssurance({ acr: 'phrh' }, 'passkey'), 'passkey');
  t.equal(federatedAssurance({ amr: ['hwk'] }, 'passkey'), 'email', 'a key without user verification');
  t.equal(federatedAssurance({ amr: ['pwd', 'otp'] }, 'passkey'), 'email');
  t.same(federatedAmr({ amr: ['pwd', 'fed'] }), ['fed', 'pwd']);
  t.same(federatedAmr({}), ['fed']);
});

t.test('directory keys: Entra oid else sub, the UPN, never the email claim', async (t) => {
  const entra = 'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0';
  t.same(
    directoryKeys(entra, {
      sub: 'pairwise',
      oid: 'oid-1',
      tid: 't',
      email: 'ceo@acme.example',
      upn: 'ada@acme.example',
    }),
    { externalId: 'oid-1', userName: 'ada@acme.example' },
  );
  t.same(directoryKeys('https://idp.acme.example', { sub: 's-1', preferred_username: 'ada@acme.example' }), {
    externalId: 's-1',
    userName: 'ada@acme.example',
  });
  t.same(directoryKeys('https://idp.acme.example', { sub: 's-1', email: 'ceo@acme.example' }), {
    externalId: 's-1',
    userName: null,
  });
});
