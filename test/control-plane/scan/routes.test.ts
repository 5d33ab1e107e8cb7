import t, { type Test } from 'tap';
import { compactVerify, createLocalJWKSet } from 'jose';
import { build, manualClock } from '../../helpers/build.js';
import { signUp } from '../../helpers/accounts.js';
import { makeTestCa } from '../../helpers/tls.js';
import { verifyRating, type Rating } from '#lib/scan/rating.js';
import { rescanDueSites } from '../../../control-plane/src/scan/rescans.js';
import { startTxtServer } from '../../helpers/dns-server.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { closedHttpUrl, HARDENED_HEADERS, startSite } from './sites.js';

const tls = makeTestCa(t);

async function app(t: Test, config: Record<string, unknown> = {}, now?: () => number) {
  return build(t, {
    config: { 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile, 'scan.rescanIntervalHours': 0, ...config },
    ...(now ? { now } : {}),
  });
}

t.test(
  'public scan: a signed Rating, cached for a few minutes, readable as a page; verifiable with jose and the JWKS',
  async (t) => {
    const { app: server } = await app(t);
    const site = await startSite(t, tls, HARDENED_HEADERS);
    const url = `${site.origin}/`;
    const first = await server.inject({ method: 'POST', url: '/scan', payload: { url } });
    t.equal(first.statusCode, 200);
    const body = first.json();
    t.match(body, {
      ok: true,
      cached: false,
      receipt: /^[0-9a-f]{64}$/,
      rating: { url, algorithm: 'keyplane-scan/1 (observatory-5)' },
    });
    const rating = body.rating as Rating;
    const jwks = (await server.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    t.same(await verifyRating(rating, jwks), (({ signature: _s, ...rest }) => rest)(rating));
    const { protectedHeader } = await compactVerify(rating.signature, createLocalJWKSet(jwks));
    t.equal(protectedHeader.typ, 'keyplane-rating+jws');

    const requestsBefore = site.requests.length;
    const second = (await server.inject({ method: 'POST', url: '/scan', payload: { url } })).json();
    t.equal(second.cached, true);
    t.equal(site.requests.length, requestsBefore, 'a cached result does not touch the site');
    t.same((await server.inject({ method: 'GET', url: `/scan?format=json&url=${encodeURIComponent(url)}` })).json(), {
      ok: true,
      rating,
    });
    t.equal(
      (
        await server.inject({
          method: 'GET',
          url: `/scan?format=json&url=${encodeURIComponent('https://never.example/')}`,
        })
      ).statusCode,
      404,
    );
    t.equal((await server.inject({ method: 'GET', url: '/scan?format=json' })).json().reason, 'invalid_request');

    const page = await server.inject({
      method: 'GET',
      url: `/scan?url=${encodeURIComponent(url)}`,
      headers: { accept: 'text/html' },
    });
    t.equal(page.statusCode, 200);
    t.match(page.body, /data-field="grade">[A-F]/);
    t.match(page.body, /data-test="x-content-type-options"/);
    t.match(page.headers['content-security-policy'], /default-src 'none'/);
    const empty = await server.inject({ method: 'GET', url: '/scan', headers: { accept: 'text/html' } });
    t.match(empty.body, /<form method="post" data-kp-post data-then="scan" action="\/scan"/);
    const bad = await server.inject({
      method: 'GET',
      url: '/scan?url=http%3A%2F%2Fx',
      headers: { accept: 'text/html' },
    });
    t.match(bad.body, /cannot be scanned/);
    // Answered by the one error handler: the refusal's status, the form again with the person's URL.
    t.equal(bad.statusCode, 400);
    t.match(
      bad.body,
      /<input id="scan-url" name="url" type="url" required placeholder="https:\/\/www.example.com\/" value="http:\/\/x">/,
    );
    const badForm = await server.inject({
      method: 'POST',
      url: '/scan',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      payload: 'url=http%3A%2F%2Fx',
    });
    t.equal(badForm.statusCode, 400);
    t.match(badForm.body, /cannot be scanned/, 'a plain form post gets the form again too');
    t.match(badForm.body, /value="http:\/\/x"/);
    const unknown = await server.inject({
      method: 'GET',
      url: '/scan?url=https%3A%2F%2Fnever.example%2F',
      headers: { accept: 'text/html' },
    });
    t.match(unknown.body, /not been scanned yet/);

    const form = await server.inject({
      method: 'POST',
      url: '/scan',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      payload: `url=${encodeURIComponent(url)}`,
    });
    t.equal(form.statusCode, 303);
    t.equal(form.headers.location, `/scan?url=${encodeURIComponent(url)}`);
  },
);

t.test('public scan refusals: bad URLs, per-address and per-host throttles', async (t) => {
  const { app: server } = await app(t, { 'scan.publicPerIpPerHour': 4, 'scan.publicPerHostPerHour': 1 });
  for (const url of ['http://shop.example/', 'https://u:p@shop.example/', 'https://127.0.0.1/']) {
    const res = await server.inject({ method: 'POST', url: '/scan', payload: { url } });
    t.equal(res.statusCode, 400, url);
    t.equal(res.json().reason, 'scan_target_refused');
  }
  const site = await startSite(t, tls, HARDENED_HEADERS);
  t.equal(
    (await server.inject({ method: 'POST', url: '/scan', payload: { url: `${site.origin}/a` } })).statusCode,
    200,
  );
  const host = await server.inject({ method: 'POST', url: '/scan', payload: { url: `${site.origin}/b` } });
  t.equal(host.statusCode, 429, 'a second fresh scan of the same host');
  t.equal(host.json().reason, 'rate_limited');
  t.ok(host.headers['retry-after']);
  const ip = await server.inject({ method: 'POST', url: '/scan', payload: { url: `${site.origin}/a` } });
  t.equal(ip.statusCode, 429, 'the fifth request from this address');
});

t.test('org scan, domain proof, seal and verification page; stale after 30 days', async (t) => {
  const clock = manualClock(Date.now());
  const { app: server } = await app(t, {}, clock.now);
  const alice = await signUp(server, 'alice');
  const bob = await signUp(server, 'bob');
  let token = '';
  const site = await startSite(t, tls, HARDENED_HEADERS, undefined, (req, res) => {
    if (req.url !== '/.well-known/keyplane-site.txt') return false;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`keyplane-site=${token}\n`);
    return true;
  });
  const post = (url: string, payload: Record<string, unknown> = {}, who = alice) =>
    server.inject({ method: 'POST', url, headers: who.headers, payload });
  await post('/auth/orgs/create', { name: 'Acme' });
  t.equal((await post('/org/acme/scan')).json().reason, 'not_found', 'no site yet');
  const { siteId } = (await post('/org/acme/websites/add', { url: `${site.origin}/` })).json();
  const scanned = await post('/org/acme/scan');
  t.equal(scanned.statusCode, 200);
  t.match(scanned.json(), { ok: true, siteId, rating: { url: `${site.origin}/` }, receipt: /^[0-9a-f]{64}$/ });
  t.equal((await post('/org/acme/scan', {}, bob)).statusCode, 404, 'outsiders cannot scan');
  t.equal((await post('/org/acme/scan', { siteId: 'site_nope' })).json().reason, 'not_found');
  t.match((await post('/org/acme/scan', { website: `${site.origin}/other` })).json(), { siteId: null });
  const view = (await server.inject({ method: 'GET', url: '/org/acme?format=json', headers: alice.headers })).json();
  t.equal(view.rating.grade, scanned.json().rating.grade, 'the headline tracks the primary site');
  t.equal(view.sites[0].verified, false);

  // Until the domain is proved there is no seal.
  const sealFor = () =>
    server.inject({ method: 'GET', url: `/embed/seal.json?origin=${encodeURIComponent(site.origin)}` });
  t.equal((await sealFor()).statusCode, 404);
  t.equal((await server.inject({ method: 'GET', url: `/verify/${siteId}?format=json` })).json().status, 'unverified');
  const refused = await post('/org/acme/websites/verify', { siteId });
  t.equal(refused.statusCode, 409);
  t.equal(refused.json().reason, 'domain_not_verified');
  token = view.sites[0].proof.wellKnown.value.replace('keyplane-site=', '');
  t.match((await post('/org/acme/websites/verify', { siteId })).json(), {
    ok: true,
    method: 'well-known',
    receipt: /^[0-9a-f]{64}$/,
  });

  const seal = await sealFor();
  t.equal(seal.statusCode, 200);
  t.match(seal.json(), {
    ok: true,
    siteId,
    grade: scanned.json().rating.grade,
    stale: false,
    verifyUrl: `http://localhost:4400/verify/${siteId}`,
  });
  t.equal(seal.headers['access-control-allow-origin'], '*');
  t.notOk(seal.headers['set-cookie']);
  const script = await server.inject({ method: 'GET', url: '/embed/seal.js' });
  t.equal(script.statusCode, 200);
  t.match(script.headers['content-type'], /javascript/);
  t.equal(script.headers['cross-origin-resource-policy'], 'cross-origin');
  t.notOk(script.headers['set-cookie']);
  t.match(script.body, /credentials: 'omit'/);

  const verify = (await server.inject({ method: 'GET', url: `/verify/${siteId}?format=json` })).json();
  t.match(verify, {
    ok: true,
    siteId,
    url: `${site.origin}/`,
    org: { slug: 'acme', name: 'Acme' },
    verified: true,
    status: 'current',
  });
  const jwks = (await server.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
  await verifyRating(verify.rating, jwks);
  const page = await server.inject({
    method: 'GET',
    url: `/verify/${siteId}`,
    headers: { accept: 'text/html', referer: 'https://phish.example/x' },
  });
  t.match(page.body, /data-field="org">Acme/);
  t.match(page.body, /You came here from <strong>https:\/\/phish.example<\/strong>/);
  const german = await server.inject({
    method: 'GET',
    url: `/verify/${siteId}`,
    headers: { accept: 'text/html', 'accept-language': 'de', referer: 'https://phish.example/x' },
  });
  t.match(german.body, '<h1>Überprüfung der Website</h1>', 'the verification page in the reader’s language');
  t.match(german.body, 'Sie kommen von <strong>https://phish.example</strong>');
  t.match(german.body, /data-field="status" data-value="current">aktuell</);
  t.match(german.body, /<h2 id="report-h">Note <strong data-field="grade">/, 'and its report');
  t.equal((await server.inject({ method: 'GET', url: '/verify/site_nope?format=json' })).statusCode, 404);
  t.equal(
    (await server.inject({ method: 'GET', url: '/embed/seal.json?origin=nonsense' })).json().reason,
    'invalid_request',
  );

  clock.advance(31 * 86_400_000);
  t.equal(
    (await server.inject({ method: 'GET', url: `/verify/${siteId}?format=json` })).json().status,
    'stale',
    'never shown as current',
  );
  t.equal((await sealFor()).json().stale, true);
  t.match(
    (await server.inject({ method: 'GET', url: `/verify/${siteId}`, headers: { accept: 'text/html' } })).body,
    /not current/,
  );
});

t.test('daily rescans of primary sites, one replica at a time, counted in kp_scans_total', async (t) => {
  const clock = manualClock(Date.now());
  const { app: server, services } = await app(t, { 'scan.rescanIntervalHours': 24 }, clock.now);
  const alice = await signUp(server, 'alice');
  const site = await startSite(t, tls, HARDENED_HEADERS);
  await server.inject({ method: 'POST', url: '/auth/orgs/create', headers: alice.headers, payload: { name: 'Acme' } });
  const { siteId } = (
    await server.inject({
      method: 'POST',
      url: '/org/acme/websites/add',
      headers: alice.headers,
      payload: { url: `${site.origin}/` },
    })
  ).json();
  await server.inject({
    method: 'POST',
    url: '/org/acme/websites/add',
    headers: alice.headers,
    payload: { url: `${site.origin}/second` },
  });

  t.same(await rescanDueSites(services), [siteId], 'never scanned: due; only the primary');
  t.same(await rescanDueSites(services), [], 'scanned just now');
  await services.state.setIfAbsent('scan:rescan-lease', 'another-replica', 60_000);
  clock.advance(25 * 3_600_000);
  t.same(await rescanDueSites(services), [], 'another replica holds the lease');
  await services.state.del('scan:rescan-lease');
  t.same(await rescanDueSites(services), [siteId]);
  t.equal((await services.storage.scans.historyForSite(siteId, 10)).length, 2);
  const metrics = (await server.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /kp_scans_total\{trigger="schedule",outcome="graded"\} 2/);
});

t.test("a site's domain is proved by a TXT record found through the configured resolvers (dns2)", async (t) => {
  const records = new Map<string, string[][]>();
  const dns = await startTxtServer(t, records);
  const { app: server } = await app(t, { 'dns.resolvers': [dns.address] });
  const alice = await signUp(server, 'alice');
  const site = await startSite(t, tls, HARDENED_HEADERS);
  const post = (url: string, payload: Record<string, unknown> = {}) =>
    server.inject({ method: 'POST', url, headers: alice.headers, payload });
  await post('/auth/orgs/create', { name: 'Acme' });
  const { siteId } = (await post('/org/acme/websites/add', { url: `${site.origin}/` })).json();
  const view = (await server.inject({ method: 'GET', url: '/org/acme?format=json', headers: alice.headers })).json();
  const proof = view.sites[0].proof.dns as { name: string; value: string };
  const host = new URL(site.origin).hostname;
  t.equal(proof.name, `_keyplane.${host}`);

  records.set(proof.name, [['keyplane-site=not-ours']]);
  const wrong = await post('/org/acme/websites/verify', { siteId });
  t.equal(wrong.statusCode, 409, 'a TXT record with another value proves nothing');
  t.equal(wrong.json().reason, 'domain_not_verified');
  // A long value split into character-strings (RFC 7208 §3.3) still matches once joined.
  records.set(proof.name, [['v=spf1 -all'], [proof.value.slice(0, 20), proof.value.slice(20)]]);
  const proved = await post('/org/acme/websites/verify', { siteId });
  t.equal(proved.statusCode, 200, proved.body);
  t.match(proved.json(), { ok: true, method: 'dns', receipt: /^[0-9a-f]{64}$/ });
  t.equal((await server.inject({ method: 'GET', url: `/verify/${siteId}?format=json` })).json().verified, true);
});

t.test(
  'a failed domain proof names the actual reason: not published, wrong content, certificate, fetch error',
  async (t) => {
    const dns = await startTxtServer(t, new Map());
    const { app: server } = await app(t, { 'dns.resolvers': [dns.address] });
    const alice = await signUp(server, 'alice');
    let wellKnown: string | null = null;
    const serveProof = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url !== '/.well-known/keyplane-site.txt' || wellKnown === null) return false;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(wellKnown);
      return true;
    };
    const trusted = await startSite(t, tls, HARDENED_HEADERS, undefined, serveProof);
    const untrusted = await startSite(t, makeTestCa(t), HARDENED_HEADERS, undefined, serveProof);
    const post = (url: string, payload: Record<string, unknown> = {}) =>
      server.inject({ method: 'POST', url, headers: alice.headers, payload });
    await post('/auth/orgs/create', { name: 'Acme' });
    const add = async (url: string) => (await post('/org/acme/websites/add', { url })).json().siteId as string;
    const trustedId = await add(`${trusted.origin}/`);
    const untrustedId = await add(`${untrusted.origin}/`);
    const downId = await add(`${(await closedHttpUrl()).replace('http:', 'https:')}`);
    const verify = async (siteId: string) => {
      const res = await post('/org/acme/websites/verify', { siteId });
      t.equal(res.statusCode, 409, res.body);
      t.equal(res.json().reason, 'domain_not_verified');
      return res.json() as { cause: string; message: string; checks: Record<string, { outcome: string }> };
    };

    const unpublished = await verify(trustedId);
    t.equal(unpublished.cause, 'not_published');
    t.match(unpublished.message, /answered 404 \(not published\)/);
    t.same(unpublished.checks, {
      dns: { outcome: 'no_records' },
      wellKnown: { outcome: 'not_published', status: 404 },
    });

    wellKnown = 'keyplane-site=someone-elses-token\n';
    const wrong = await verify(trustedId);
    t.equal(wrong.cause, 'wrong_content');
    t.match(wrong.message, /was fetched but has no line keyplane-site=/);

    const certificate = await verify(untrustedId);
    t.equal(certificate.cause, 'certificate_failed', 'the file is there, but its certificate does not verify');
    t.match(certificate.message, /TLS certificate did not verify/);
    t.notMatch(certificate.message, /Publish/);

    const down = await verify(downId);
    t.equal(down.cause, 'fetch_failed');
    t.match(down.message, /could not be fetched/);
  },
);
