import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { create } from 'xmlbuilder2';
import { encodeRedirectMessage, signRedirectQuery } from '#lib/saml/bindings.js';
import { generateSamlKey } from '#lib/saml/certificate.js';
import { BINDING, NAMEID_FORMAT, NS } from '#lib/saml/constants.js';
import { newSamlId } from '#lib/saml/response.js';
import { signSamlElement } from '#lib/saml/sign.js';
import { parseXml } from '#lib/saml/xml.js';
import { samlKeyRing } from '../../../control-plane/src/saml/key-ring.js';
import { Browser, buildSignedIn } from '../../helpers/signed-in.js';
import { TEST_ISSUER } from '../../helpers/build.js';

/**
 * The SAML IdP over HTTP: provider registration, metadata, SSO over both bindings through
 * sign-in and step-up to the auto-posting form, single logout, and every refusal the issue
 * names, each answered with a page or envelope and no Response issued (no receipt written).
 */
const ADMIN = 'saml-admin-token-0123456789abcdef0123456789';
const SSO = `${TEST_ISSUER}/saml/sso`;
const SP_ENTITY = 'https://sp.example.com/mellon/metadata';
const ACS = 'https://sp.example.com/mellon/postResponse';
const SLO = 'https://sp.example.com/mellon/logout';
const xmlsecMissing = !existsSync('/usr/bin/xmlsec1');

const spKeys = Promise.all([
  generateSamlKey({ commonName: 'SP', now: Date.now(), validDays: 30, modulusLength: 2048 }),
  generateSamlKey({ commonName: 'Attacker', now: Date.now(), validDays: 30, modulusLength: 2048 }),
]);

function authnRequest(
  options: {
    issuer?: string;
    acs?: string;
    id?: string;
    instant?: number;
    extra?: Record<string, string>;
    context?: { comparison: string; refs: string[] };
    format?: string;
  } = {},
) {
  const id = options.id ?? newSamlId();
  const root = create().ele(NS.protocol, 'samlp:AuthnRequest', {
    ID: id,
    Version: '2.0',
    IssueInstant: new Date(options.instant ?? Date.now()).toISOString(),
    Destination: SSO,
    AssertionConsumerServiceURL: options.acs ?? ACS,
    ProtocolBinding: BINDING.post,
    ...options.extra,
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(options.issuer ?? SP_ENTITY);
  if (options.format) root.ele(NS.protocol, 'samlp:NameIDPolicy', { Format: options.format, AllowCreate: 'true' });
  if (options.context) {
    const context = root.ele(NS.protocol, 'samlp:RequestedAuthnContext', { Comparison: options.context.comparison });
    for (const ref of options.context.refs) context.ele(NS.assertion, 'saml:AuthnContextClassRef').txt(ref);
  }
  return { xml: root.end({ headless: true }), id };
}

function logoutRequest(nameId: string, sessionIndex?: string) {
  const id = newSamlId();
  const root = create().ele(NS.protocol, 'samlp:LogoutRequest', {
    ID: id,
    Version: '2.0',
    IssueInstant: new Date().toISOString(),
    Destination: `${TEST_ISSUER}/saml/slo`,
  });
  root.ele(NS.assertion, 'saml:Issuer').txt(SP_ENTITY);
  root.ele(NS.assertion, 'saml:NameID', { Format: NAMEID_FORMAT.persistent }).txt(nameId);
  if (sessionIndex !== undefined) root.ele(NS.protocol, 'samlp:SessionIndex').txt(sessionIndex);
  return root.end({ headless: true });
}

function formValue(body: string, name: string): string | undefined {
  return new RegExp(`name="${name}" value="([^"]*)"`)
    .exec(body)?.[1]
    ?.replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
}

t.test('SAML identity provider', async (t) => {
  const [sp, attacker] = await spKeys;
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { app, services } = built;
  const admin = { authorization: `Bearer ${ADMIN}` };
  const issued = async () => {
    const text = await services.metrics.getSingleMetricAsString('keyplane_receipts_total');
    return Number(/kind="saml\.assertion_issued"\} (\d+)/.exec(text)?.[1] ?? 0);
  };

  const registered = await app.inject({
    method: 'POST',
    url: '/saml/providers',
    headers: admin,
    payload: {
      entity_id: SP_ENTITY,
      acs_urls: [ACS],
      certificate: sp.certificatePem,
      slo_url: SLO,
      name: 'Mellon',
      attributes: { assurance: 'assurance', username: 'username', mail: 'email' },
    },
  });
  t.equal(registered.statusCode, 201, registered.statusCode === 201 ? 'registered' : registered.body);
  const provider = registered.json().provider;
  t.match(registered.json().receipt, /^[0-9a-f]{64}$/);
  t.equal(provider.want_signed_requests, true, 'signed requests are the default');
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/saml/providers',
        headers: admin,
        payload: { entity_id: SP_ENTITY, acs_urls: [ACS], certificate: sp.certificatePem },
      })
    ).json().reason,
    'conflict',
    'one registration per entityID',
  );
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/saml/providers',
        headers: admin,
        payload: { entity_id: 'x', acs_urls: ['http://evil.example/acs'], certificate: sp.certificatePem },
      })
    ).json().reason,
    'invalid_request',
    'plain http ACS refused',
  );
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/saml/providers',
        payload: { entity_id: 'x', acs_urls: [ACS], certificate: sp.certificatePem },
      })
    ).statusCode,
    401,
  );

  const { browser, identityId } = await built.signIn({ username: 'ada' });

  await t.test('metadata: entityID, both bindings, the current signing certificate', async (t) => {
    const res = await app.inject({ url: '/saml/metadata' });
    t.equal(res.statusCode, 200);
    t.match(res.headers['content-type'], /samlmetadata\+xml/);
    const doc = parseXml(res.body);
    t.equal(doc.documentElement!.getAttribute('entityID'), `${TEST_ISSUER}/saml/metadata`);
    t.equal(doc.getElementsByTagNameNS(NS.metadata, 'SingleSignOnService').length, 2);
    const current = await samlKeyRing(services).current();
    t.ok(res.body.includes(current.certificatePem.split('\n')[1]!), 'the signing certificate is listed');
  });

  await t.test('Redirect binding: sign-in, then a signed Response posted to the registered ACS', async (t) => {
    const before = await issued();
    const { xml, id } = authnRequest();
    const query = signRedirectQuery('SAMLRequest', xml, 'relay-1', sp.privateKeyPem);
    const anonymous = new Browser(app);
    const first = await anonymous.get(`/saml/sso?${query}`);
    t.equal(first.statusCode, 303);
    t.match(first.headers.location, /^\/auth\?return=%2Fsaml%2Fsso%3Fresume%3D/, 'no session: to sign-in and back');
    const resume = decodeURIComponent(String(first.headers.location).split('return=')[1]!);
    const page = await browser.get(resume);
    t.equal(page.statusCode, 200, page.body);
    t.match(page.headers['content-security-policy'], /form-action 'self' https:\/\/sp\.example\.com/);
    t.match(page.headers['content-security-policy'], /script-src 'nonce-/);
    t.notMatch(page.body, /onload=|onclick=/, 'no inline handlers');
    t.match(page.body, /<script type="module" nonce="[^"]+" src="\/saml\/post\.js">/);
    t.match(page.body, new RegExp(`action="${ACS}"`));
    t.equal(formValue(page.body, 'RelayState'), 'relay-1');
    const response = Buffer.from(formValue(page.body, 'SAMLResponse')!, 'base64').toString('utf8');
    const doc = parseXml(response);
    const text = (local: string) => doc.getElementsByTagNameNS(NS.assertion, local)[0]?.textContent;
    t.equal(text('NameID'), identityId, 'persistent NameID = sub');
    t.equal(text('Audience'), SP_ENTITY);
    t.equal(text('AuthnContextClassRef'), 'urn:keyplane:assurance:passkey');
    t.equal(doc.documentElement!.getAttribute('InResponseTo'), id);
    const attributes = Object.fromEntries(
      [
        ...(doc.getElementsByTagNameNS(NS.assertion, 'Attribute') as unknown as Iterable<{
          getAttribute(n: string): string;
          textContent: string;
        }>),
      ].map((a) => [a.getAttribute('Name'), a.textContent]),
    );
    t.equal(attributes.assurance, 'passkey');
    t.equal(attributes.username, 'ada');
    t.notOk('mail' in attributes && attributes.mail, 'no unverified email');
    t.equal(await issued(), before + 1, 'a saml.assertion_issued receipt');
    t.equal((await browser.get(resume)).statusCode, 400, 'the parked request is answered once');
    if (!xmlsecMissing) {
      const dir = mkdtempSync(join(tmpdir(), 'kp-saml-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      writeFileSync(join(dir, 'r.xml'), response);
      writeFileSync(join(dir, 'idp.crt'), (await samlKeyRing(services).current()).certificatePem);
      for (const xpath of [
        "/*[local-name()='Response']/*[local-name()='Signature']",
        "//*[local-name()='Assertion']/*[local-name()='Signature']",
      ]) {
        t.doesNotThrow(
          () =>
            execFileSync(
              'xmlsec1',
              [
                '--verify',
                '--pubkey-cert-pem',
                join(dir, 'idp.crt'),
                '--id-attr:ID',
                'urn:oasis:names:tc:SAML:2.0:protocol:Response',
                '--id-attr:ID',
                'urn:oasis:names:tc:SAML:2.0:assertion:Assertion',
                '--node-xpath',
                xpath,
                join(dir, 'r.xml'),
              ],
              { stdio: 'pipe' },
            ),
          `xmlsec1 verifies ${xpath}`,
        );
      }
    }
  });

  await t.test('POST binding continues by GET, so the Lax session cookie comes along', async (t) => {
    const { xml, id } = authnRequest();
    const signed = signSamlElement(xml, id, sp);
    const posted = await app.inject({
      method: 'POST',
      url: '/saml/sso',
      headers: { origin: 'https://sp.example.com' },
      payload: { SAMLRequest: Buffer.from(signed).toString('base64') },
    });
    t.equal(posted.statusCode, 303, posted.body);
    const page = await browser.get(String(posted.headers.location));
    t.equal(page.statusCode, 200);
    t.ok(formValue(page.body, 'SAMLResponse'));
  });

  await t.test(
    'ForceAuthn and RequestedAuthnContext go through step-up; the class ref says what was proved',
    async (t) => {
      for (const request of [
        authnRequest({ extra: { ForceAuthn: 'true' } }),
        authnRequest({ context: { comparison: 'minimum', refs: ['urn:keyplane:assurance:sensitive'] } }),
      ]) {
        const res = await browser.get(
          `/saml/sso?${signRedirectQuery('SAMLRequest', request.xml, undefined, sp.privateKeyPem)}`,
        );
        t.equal(res.statusCode, 303);
        t.match(res.headers.location, /^\/auth\/step-up\?return=%2Fsaml%2Fsso%3Fresume%3D/);
      }
      const { browser: strong } = await built.signIn({ username: 'grace', assurance: 'sensitive' });
      const request = authnRequest({ context: { comparison: 'exact', refs: ['urn:keyplane:assurance:sensitive'] } });
      const page = await strong.get(
        `/saml/sso?${signRedirectQuery('SAMLRequest', request.xml, undefined, sp.privateKeyPem)}`,
      );
      t.equal(page.statusCode, 200);
      t.match(
        Buffer.from(formValue(page.body, 'SAMLResponse')!, 'base64').toString(),
        /urn:keyplane:assurance:sensitive/,
      );
      const passive = authnRequest({ extra: { IsPassive: 'true', ForceAuthn: 'true' } });
      const refused = await browser.get(
        `/saml/sso?${signRedirectQuery('SAMLRequest', passive.xml, undefined, sp.privateKeyPem)}`,
      );
      t.match(
        Buffer.from(formValue(refused.body, 'SAMLResponse')!, 'base64').toString(),
        /status:NoPassive/,
        'IsPassive: a signed NoPassive answer, no assertion',
      );
      const email = authnRequest({ format: NAMEID_FORMAT.email });
      const noEmail = await browser.get(
        `/saml/sso?${signRedirectQuery('SAMLRequest', email.xml, undefined, sp.privateKeyPem)}`,
      );
      const answer = Buffer.from(formValue(noEmail.body, 'SAMLResponse')!, 'base64').toString();
      t.match(answer, /InvalidNameIDPolicy/, 'emailAddress only when verified');
      t.notMatch(answer, /Assertion/);
    },
  );

  await t.test('emailAddress NameID and the email attribute once the address is verified', async (t) => {
    const now = Date.now();
    const row = await services.storage.emails.add({
      emailId: 'eml_ada',
      identityId,
      email: 'ada@example.com',
      createdAt: now,
      verifiedAt: null,
    });
    await services.storage.emails.markVerified(row.emailId, now);
    const request = authnRequest({ format: NAMEID_FORMAT.email });
    const page = await browser.get(
      `/saml/sso?${signRedirectQuery('SAMLRequest', request.xml, undefined, sp.privateKeyPem)}`,
    );
    const doc = parseXml(Buffer.from(formValue(page.body, 'SAMLResponse')!, 'base64').toString());
    const nameId = doc.getElementsByTagNameNS(NS.assertion, 'NameID')[0]!;
    t.equal(nameId.textContent, 'ada@example.com');
    t.equal(nameId.getAttribute('Format'), NAMEID_FORMAT.email);
    t.match(
      doc.toString(),
      /Name="mail"[^>]*><saml:AttributeValue>ada@example\.com</,
      'the verified address as the mail attribute',
    );
  });

  await t.test('every refusal: a page or envelope with its reason, nothing issued', async (t) => {
    const before = await issued();
    const get = (query: string, json = false) =>
      browser.get(`/saml/sso?${query}`, json ? { accept: 'application/json' } : {});
    const post = (xml: string) =>
      app.inject({ method: 'POST', url: '/saml/sso', payload: { SAMLRequest: Buffer.from(xml).toString('base64') } });
    const reasonOf = (res: { body: string; headers: Record<string, unknown> }) =>
      /data-reason="([a-z_]+)"/.exec(res.body)?.[1] ??
      (String(res.headers['content-type']).includes('json') ? JSON.parse(res.body).reason : undefined);
    const check = async (
      label: string,
      res: { statusCode: number; body: string; headers: Record<string, unknown> },
      reason: string,
    ) => {
      t.equal(reasonOf(res), reason, label);
      t.notMatch(res.body, /SAMLResponse/, `${label}: no Response`);
      t.ok(res.statusCode >= 400, `${label}: ${res.statusCode}`);
    };
    const unsigned = authnRequest();
    await check(
      'unsigned request from an SP that must sign',
      await get(`SAMLRequest=${encodeURIComponent(encodeRedirectMessage(unsigned.xml))}`),
      'saml_signature_invalid',
    );
    await check('unsigned POST', await post(authnRequest().xml), 'saml_signature_invalid');
    await check(
      'signed by another certificate (Redirect)',
      await get(signRedirectQuery('SAMLRequest', authnRequest().xml, undefined, attacker.privateKeyPem)),
      'saml_signature_invalid',
    );
    const other = authnRequest();
    await check(
      'signed by another certificate (POST)',
      await post(signSamlElement(other.xml, other.id, attacker)),
      'saml_signature_invalid',
    );
    const good = authnRequest();
    const signed = signSamlElement(good.xml, good.id, sp);
    const evil = authnRequest({ acs: 'https://evil.example/acs' });
    await check(
      'wrapped signature',
      await post(
        evil.xml.replace('</samlp:AuthnRequest>', `${signed.replace(/^<\?xml[^>]*>/, '')}</samlp:AuthnRequest>`),
      ),
      'saml_signature_invalid',
    );
    const signature = /<ds:Signature[\s\S]*<\/ds:Signature>/.exec(signed)![0];
    await check(
      'signature lifted onto other content',
      await post(
        evil.xml.replace(`ID="${evil.id}"`, `ID="${good.id}"`).replace('</saml:Issuer>', `</saml:Issuer>${signature}`),
      ),
      'saml_signature_invalid',
    );
    const bomb = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><samlp:AuthnRequest xmlns:samlp="${NS.protocol}">&b;</samlp:AuthnRequest>`;
    await check('XML bomb', await post(bomb), 'saml_request_invalid');
    const xxe = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><samlp:AuthnRequest xmlns:samlp="${NS.protocol}">&e;</samlp:AuthnRequest>`;
    await check(
      'external entity',
      await get(`SAMLRequest=${encodeURIComponent(encodeRedirectMessage(xxe))}`),
      'saml_request_invalid',
    );
    // Finding 6 of issue 29: a parameter the query parser decodes but the signed octets do not hold.
    const smuggled = await get(
      `${signRedirectQuery('SAMLRequest', authnRequest().xml, undefined, sp.privateKeyPem)}&Relay%53tate=${encodeURIComponent('https://attacker.example/phish')}`,
    );
    await check('a percent-encoded RelayState name beside a signed request', smuggled, 'saml_signature_invalid');
    t.equal(smuggled.statusCode, 403);
    t.notMatch(smuggled.body, /attacker\.example/, 'the smuggled RelayState goes nowhere');
    const signedQuery = signRedirectQuery('SAMLRequest', authnRequest().xml, 'kept', sp.privateKeyPem);
    await check(
      'a second, percent-encoded SAMLRequest name',
      await get(`${signedQuery}&SAML%52equest=${encodeURIComponent(encodeRedirectMessage(authnRequest().xml))}`),
      'saml_signature_invalid',
    );
    await check('a RelayState given twice', await get(`${signedQuery}&RelayState=other`), 'saml_signature_invalid');
    const once = authnRequest();
    const onceQuery = signRedirectQuery('SAMLRequest', once.xml, undefined, sp.privateKeyPem);
    t.equal((await get(onceQuery)).statusCode, 200, 'first use');
    await check('replayed request ID', await get(onceQuery), 'saml_request_replayed');
    await check(
      'unregistered ACS URL',
      await get(
        signRedirectQuery(
          'SAMLRequest',
          authnRequest({ acs: 'https://evil.example/acs' }).xml,
          undefined,
          sp.privateKeyPem,
        ),
      ),
      'saml_acs_not_registered',
    );
    await check(
      'unknown SP',
      await get(
        signRedirectQuery(
          'SAMLRequest',
          authnRequest({ issuer: 'https://unknown.example/sp' }).xml,
          undefined,
          sp.privateKeyPem,
        ),
      ),
      'saml_unknown_provider',
    );
    await check(
      'stale IssueInstant',
      await get(
        signRedirectQuery(
          'SAMLRequest',
          authnRequest({ instant: Date.now() - 3_600_000 }).xml,
          undefined,
          sp.privateKeyPem,
        ),
      ),
      'saml_request_invalid',
    );
    await check(
      'wrong Destination',
      await get(
        signRedirectQuery(
          'SAMLRequest',
          authnRequest({ extra: { Destination: 'https://other.example/sso' } }).xml,
          undefined,
          sp.privateKeyPem,
        ),
      ),
      'saml_request_invalid',
    );
    const inflated = deflateRawSync(Buffer.alloc(20 * 1024 * 1024, 0x20)).toString('base64');
    await check('deflate bomb', await get(`SAMLRequest=${encodeURIComponent(inflated)}`), 'saml_request_invalid');
    await check(
      'IdP-initiated for an SP that does not allow it',
      await get(`sp=${encodeURIComponent(SP_ENTITY)}`),
      'saml_unknown_provider',
    );
    const json = await get(`SAMLRequest=${encodeURIComponent(encodeRedirectMessage(authnRequest().xml))}`, true);
    t.same(
      json.json(),
      { ok: false, reason: 'saml_signature_invalid', message: json.json().message },
      'an API caller gets the envelope',
    );
    t.equal(await issued(), before + 1, 'only the one valid request issued anything');
  });

  await t.test('IdP-initiated sign-in for an SP that allows it', async (t) => {
    const updated = await app.inject({
      method: 'PUT',
      url: `/saml/providers/${provider.id}`,
      headers: admin,
      payload: {
        entity_id: SP_ENTITY,
        acs_urls: [ACS],
        certificate: sp.certificatePem,
        slo_url: SLO,
        allow_idp_initiated: true,
      },
    });
    t.equal(updated.statusCode, 200, updated.body);
    t.equal(updated.json().provider.revision, 2);
    const page = await browser.get(`/saml/sso?sp=${provider.id}&RelayState=%2Fhome`);
    t.equal(page.statusCode, 200);
    const response = Buffer.from(formValue(page.body, 'SAMLResponse')!, 'base64').toString();
    t.notMatch(response, /InResponseTo/, 'unsolicited');
  });

  await t.test(
    'single logout: a signed LogoutRequest with the SessionIndex of its assertion ends the session',
    async (t) => {
      const { browser: leaving, identityId: who } = await built.signIn({ username: 'lin' });
      const sso = await leaving.get(
        `/saml/sso?${signRedirectQuery('SAMLRequest', authnRequest().xml, undefined, sp.privateKeyPem)}`,
      );
      const assertion = parseXml(Buffer.from(formValue(sso.body, 'SAMLResponse')!, 'base64').toString());
      const index = assertion.getElementsByTagNameNS(NS.assertion, 'AuthnStatement')[0]!.getAttribute('SessionIndex')!;
      t.match(index, /^_[0-9a-f]{40}$/);
      const unsigned = await leaving.get(
        `/saml/slo?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(logoutRequest(who, index)))}`,
      );
      t.equal(
        /data-reason="([a-z_]+)"/.exec(unsigned.body)?.[1],
        'saml_signature_invalid',
        'an unsigned LogoutRequest is refused',
      );
      const statusOf = (location: URL) =>
        parseXml(inflateRawSync(Buffer.from(location.searchParams.get('SAMLResponse')!, 'base64')).toString())
          .getElementsByTagNameNS(NS.protocol, 'StatusCode')[0]!
          .getAttribute('Value');
      // The NameID alone (what any provider learns from an assertion, or guesses) ends nothing.
      for (const [label, sessionIndex] of [
        ['no SessionIndex', undefined],
        ['a SessionIndex of another session', '_0123456789abcdef0123456789abcdef01234567'],
      ] as const) {
        const res = await leaving.get(
          `/saml/slo?${signRedirectQuery('SAMLRequest', logoutRequest(who, sessionIndex), undefined, sp.privateKeyPem)}`,
        );
        t.equal(res.statusCode, 303, label);
        const location = new URL(String(res.headers.location));
        t.not(statusOf(location), 'urn:oasis:names:tc:SAML:2.0:status:Success', `${label}: no Success claimed`);
        t.equal(
          (await leaving.get('/account', { accept: 'application/json' })).statusCode,
          200,
          `${label}: the session lives`,
        );
      }
      const res = await leaving.get(
        `/saml/slo?${signRedirectQuery('SAMLRequest', logoutRequest(who, index), 'back', sp.privateKeyPem)}`,
      );
      t.equal(res.statusCode, 303);
      const location = new URL(String(res.headers.location));
      t.equal(`${location.origin}${location.pathname}`, SLO);
      t.ok(
        location.searchParams.get('SAMLResponse') && location.searchParams.get('Signature'),
        'a signed LogoutResponse',
      );
      t.equal(statusOf(location), 'urn:oasis:names:tc:SAML:2.0:status:Success');
      t.equal(location.searchParams.get('RelayState'), 'back');
      t.equal((await leaving.get('/apps', { accept: 'application/json' })).statusCode, 401, 'the session has ended');
      const text = await services.metrics.getSingleMetricAsString('keyplane_receipts_total');
      t.match(text, /kind="saml\.logout"\} 3/, 'a saml.logout receipt for each');
    },
  );

  await t.test('the operator rotates the IdP key; the old certificate stays in the metadata', async (t) => {
    const before = await samlKeyRing(services).current();
    t.equal(
      (await browser.post('/saml/keys/rotate', {})).json().reason,
      'insufficient_assurance',
      'not with a session',
    );
    const rotated = await app.inject({ method: 'POST', url: '/saml/keys/rotate', headers: admin });
    t.equal(rotated.statusCode, 200, rotated.body);
    t.equal(rotated.json().retired, before.kid);
    const metadata = (await app.inject({ url: '/saml/metadata' })).body;
    t.ok(metadata.includes(before.certificatePem.split('\n')[1]!), 'the retired certificate is still listed');
    t.not((await samlKeyRing(services).current()).kid, before.kid, 'a new key signs');
  });

  await t.test("org admins manage their org's providers; others see 404", async (t) => {
    const { browser: owner } = await built.signIn({ username: 'orgadmin', assurance: 'sensitive' });
    const created = await owner.post('/auth/orgs/create', { name: 'Acme' });
    t.equal(created.statusCode, 200, created.body);
    const slug = created.json().org?.slug ?? created.json().slug;
    const payload = {
      entity_id: 'https://acme.example/sp',
      acs_urls: ['https://acme.example/acs'],
      certificate: sp.certificatePem,
      org: slug,
    };
    // Finding 7 of issue 29: an org claims only entityIDs and ACS hosts under a domain it proved.
    const unproved = await owner.post('/saml/providers', payload);
    t.equal(unproved.statusCode, 400, 'acme.example is not proved yet');
    t.equal(unproved.json().reason, 'invalid_request');
    const orgId = (await services.storage.orgs.getBySlug(slug))!.orgId;
    await services.storage.orgs.addSite({
      siteId: 'site_acme',
      orgId,
      url: 'https://acme.example/',
      label: null,
      primary: true,
      proofToken: 'proof-acme',
      verifiedAt: null,
      createdAt: Date.now(),
    });
    await services.storage.orgs.markSiteVerified('site_acme', Date.now());
    for (const [label, claim] of [
      ['a real service entityID', { entity_id: 'https://wiki.example.com/mellon/metadata' }],
      ['an ACS host elsewhere', { acs_urls: ['https://evil.example/acs'] }],
      ['a look-alike host', { acs_urls: ['https://notacme.example/acs'] }],
    ] as const) {
      const res = await owner.post('/saml/providers', { ...payload, ...claim });
      t.equal(res.statusCode, 400, label);
      t.equal(res.json().reason, 'invalid_request', label);
    }
    const mine = await owner.post('/saml/providers', {
      ...payload,
      acs_urls: ['https://acme.example/acs', 'https://sso.acme.example/acs'],
    });
    t.equal(mine.statusCode, 201, mine.body);
    const moved = await owner.request(
      'PUT' as 'POST',
      `/saml/providers/${mine.json().provider.id}`,
      { ...payload, acs_urls: ['https://evil.example/acs'] },
      { origin: new URL(TEST_ISSUER).origin },
    );
    t.equal(moved.statusCode, 400, 'nor can an update move the ACS elsewhere');
    t.equal(moved.json().reason, 'invalid_request');
    // A claim the org made before this rule (written straight to storage here) never blocks the operator.
    const now = Date.now();
    await services.storage.saml.insertProvider({
      ...(await services.storage.saml.provider(mine.json().provider.id))!,
      id: 'sp_squatted',
      entityId: 'https://wiki.example.com/mellon/metadata',
      createdAt: now,
      updatedAt: now,
    });
    const operator = await app.inject({
      method: 'POST',
      url: '/saml/providers',
      headers: admin,
      payload: {
        entity_id: 'https://wiki.example.com/mellon/metadata',
        acs_urls: ['https://wiki.example.com/mellon/postResponse'],
        certificate: sp.certificatePem,
      },
    });
    t.equal(operator.statusCode, 201, operator.body);
    t.equal(await services.storage.saml.provider('sp_squatted'), null, "the org's claim is gone");
    t.equal(
      (await services.storage.saml.providerByEntityId('https://wiki.example.com/mellon/metadata'))?.orgId,
      null,
      "the entityID is the operator's",
    );
    await app.inject({ method: 'DELETE', url: `/saml/providers/${operator.json().provider.id}`, headers: admin });
    t.equal(mine.json().provider.org_id !== null, true);
    t.equal((await owner.get('/saml/providers')).json().providers.length, 1, "only the org's providers");
    const { browser: stranger } = await built.signIn({ username: 'stranger', assurance: 'sensitive' });
    t.equal((await stranger.get(`/saml/providers/${mine.json().provider.id}`)).statusCode, 404);
    t.equal((await stranger.post('/saml/providers', payload)).statusCode, 404, 'not an admin of that org');
    const { browser: weak } = await built.signIn({ username: 'weak' });
    t.equal(
      (await weak.post('/saml/providers', { ...payload, entity_id: 'https://x.example/sp' })).json().reason,
      'insufficient_assurance',
    );
    const page = await owner.get('/apps/saml');
    t.equal(page.statusCode, 200);
    t.match(page.body, /https:\/\/acme\.example\/sp/);
    t.match(page.headers['content-security-policy'], /script-src 'nonce-/);
    const removed = await owner.post(
      `/apps/saml/${mine.json().provider.id}/delete`,
      {},
      { 'content-type': 'application/x-www-form-urlencoded' },
    );
    t.equal(removed.statusCode, 200, removed.body.slice(0, 300));
    t.match(removed.body, /Service provider removed/);
    t.equal((await owner.get('/saml/providers')).json().providers.length, 0, 'removed from the page');
  });

  await t.test(
    'the founder is the operator on /apps/saml: every provider, and installation-wide ones from the form',
    async (t) => {
      const { browser: founder } = await built.signIn({ username: 'founderop', assurance: 'sensitive', founder: true });
      const before = await founder.get('/apps/saml');
      t.equal(before.statusCode, 200);
      t.match(before.body, /the whole installation \(operator\)/, 'the form offers the installation as owner');
      const form = new URLSearchParams({
        org: '',
        entity_id: 'https://ops.example/sp',
        acs_urls: 'https://ops.example/acs',
        certificate: sp.certificatePem,
        name_id_format: 'persistent',
        want_signed_requests: 'true',
      });
      const registered = await founder.post('/apps/saml/register', form.toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
      t.equal(registered.statusCode, 200, registered.body.slice(0, 300));
      t.match(registered.body, /https:\/\/ops\.example\/sp/);
      const stored = (await services.storage.saml.listProviders()).find((p) => p.entityId === 'https://ops.example/sp');
      t.equal(stored?.orgId, null, 'owned by the installation');
      const { browser: member } = await built.signIn({ username: 'plainmember', assurance: 'sensitive' });
      const theirs = await member.get('/apps/saml');
      t.notMatch(theirs.body, /ops\.example/, 'an ordinary account does not see installation providers');
      t.notMatch(theirs.body, /the whole installation \(operator\)/, 'nor the installation as owner');
      t.equal((await member.get(`/apps/saml/${stored!.id}/edit`)).statusCode, 404, 'not theirs to edit');
      const edit = await founder.get(`/apps/saml/${stored!.id}/edit`);
      t.equal(edit.statusCode, 200);
      t.match(edit.body, /value="https:\/\/ops\.example\/sp"/, 'the form is filled');
      t.match(edit.body, /name="revision" value="1"/);
      const saveForm = (revision: string, name: string) =>
        new URLSearchParams({
          revision,
          name,
          entity_id: 'https://ops.example/sp',
          acs_urls: 'https://ops.example/acs\nhttps://ops.example/acs2',
          certificate: sp.certificatePem,
          name_id_format: 'persistent',
          want_signed_requests: 'true',
        }).toString();
      const saved = await founder.post(`/apps/saml/${stored!.id}/update`, saveForm('1', 'Ops tool'), {
        'content-type': 'application/x-www-form-urlencoded',
      });
      t.equal(saved.statusCode, 200, saved.body.slice(0, 300));
      t.match(saved.body, /saved/);
      const after = await services.storage.saml.provider(stored!.id);
      t.equal(after?.name, 'Ops tool');
      t.same(after?.acsUrls, ['https://ops.example/acs', 'https://ops.example/acs2']);
      t.same(after?.attributes, stored!.attributes, 'the attribute mapping is kept');
      const stale = await founder.post(`/apps/saml/${stored!.id}/update`, saveForm('1', 'Late'), {
        'content-type': 'application/x-www-form-urlencoded',
      });
      t.equal(stale.statusCode, 409, 'a stale revision is refused');
      t.equal((await services.storage.saml.provider(stored!.id))?.name, 'Ops tool', 'and changes nothing');
      const removed = await founder.post(`/apps/saml/${stored!.id}/delete`, '', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      t.match(removed.body, /Service provider removed/);
    },
  );
});
