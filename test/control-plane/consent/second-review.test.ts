import t from 'tap';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { ADMIN, registerClient } from '../../helpers/oidc.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

/**
 * The second security review (issue 29) replayed as it was reported: an attacker with nothing but
 * a self-service account tries each identity-releasing path against a signed-in victim. Every
 * step here succeeded on the code before the consent gate; each now stops (docs/security.md
 * "One consent gate").
 */
t.test('a self-service attacker gets no one else’s identity from SAML or the v1 bridge', async (t) => {
  const sp = await generateSamlKey({ commonName: 'Attacker SP', now: Date.now(), validDays: 2, modulusLength: 2048 });
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { browser: attacker } = await built.signIn({ username: 'attacker', assurance: 'sensitive' });
  const { browser: victim } = await built.signIn({ username: 'victim' });

  await t.test('finding 1/7: an org cannot register a provider at a domain it never proved', async (t) => {
    const org = await attacker.post('/auth/orgs/create', { name: 'Attacker Org' });
    const slug = org.json().org?.slug ?? org.json().slug;
    for (const entity of ['https://attacker.example/metadata', 'https://wiki.example.com/mellon/metadata']) {
      const res = await attacker.post('/saml/providers', {
        entity_id: entity,
        acs_urls: ['https://attacker.example/acs'],
        certificate: sp.certificatePem,
        allow_idp_initiated: true,
        want_signed_requests: false,
        attributes: { sub: 'sub', username: 'username', email: 'email', amr: 'amr' },
        org: slug,
      });
      t.equal(res.statusCode, 400, entity);
      t.equal(res.json().reason, 'invalid_request');
    }
  });

  await t.test('finding 2: a session cannot open the v1 bridge, and an operator client still asks', async (t) => {
    const own = await attacker.post('/register', { redirect_uris: ['https://attacker.example/v1'], v1_bridge: true });
    t.equal(own.statusCode, 400);
    t.equal(own.json().reason, 'invalid_client_metadata');
    await registerClient(built.app, { redirect_uris: ['https://legacy.example/v1'], v1_bridge: true });
    const res = await victim.get(`/auth/v1/return?to=${encodeURIComponent('https://legacy.example/v1')}`);
    t.equal(res.statusCode, 200, 'the approval page');
    t.notOk(res.headers.location, 'no token in a redirect');
  });
});
