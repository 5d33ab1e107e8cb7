import t, { type Test } from 'tap';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { openServices } from '../../helpers/build.js';
import { makeTestCa } from '../../helpers/tls.js';
import { runScan } from '../../../control-plane/src/scan/run-scan.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { HARDENED_HEADERS, closedHttpUrl, startHttpSite, startSite } from './sites.js';

const tls = makeTestCa(t);

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return isKeyplaneError(error) ? error.reason : `not a KeyplaneError: ${String(error)}`;
  }
  return 'no refusal';
}

async function scanner(t: Test, options: { trustCa?: boolean } = {}) {
  const { services } = await openServices(t, {
    config: {
      'fetch.allowPrivateTargets': true,
      ...(options.trustCa === false ? {} : { 'fetch.caFile': tls.caFile }),
      'scan.rescanIntervalHours': 0,
    },
  });
  return services;
}

t.test('a hardened local site behind an http redirect grades A+ / 135, as the Observatory does', async (t) => {
  const services = await scanner(t);
  const site = await startSite(t, tls, HARDENED_HEADERS);
  const http = await startHttpSite(t, (_req, res) => {
    res.writeHead(301, { location: `${site.origin}/` });
    res.end();
  });
  const { rating } = await runScan(services, `${site.origin}/`, { siteId: null, trigger: 'public', httpUrl: http.url });
  t.match(rating, { grade: 'A+', score: 135, url: `${site.origin}/` });
  const results = Object.fromEntries(rating.tests.map((x) => [x.name, x.result]));
  t.equal(results['redirection'], 'redirection-to-https');
  t.equal(results['strict-transport-security'], 'hsts-implemented-max-age-at-least-six-months');
  t.equal(results['cookies'], 'cookies-secure-with-httponly-sessions-and-samesite');
  t.ok(site.requests.includes('OPTIONS /'), 'the CORS preflight was sent');
  t.ok(site.requests.includes('GET /crossdomain.xml'));
});

t.test('a bare site with an insecure session cookie and an http script grades F / 0', async (t) => {
  const services = await scanner(t);
  const site = await startSite(
    t,
    tls,
    { 'set-cookie': 'sessionid=1' },
    '<script src="http://cdn.example.net/x.js"></script>',
  );
  const http = await startHttpSite(t, (_req, res) => res.end('plain'));
  const { rating } = await runScan(services, `${site.origin}/`, { siteId: null, trigger: 'public', httpUrl: http.url });
  t.match(rating, { grade: 'F', score: 0 });
  const results = Object.fromEntries(rating.tests.map((x) => [x.name, x.result]));
  t.equal(results['redirection'], 'redirection-missing');
  t.equal(results['subresource-integrity'], 'sri-not-implemented-and-external-scripts-not-loaded-securely');
  t.equal(results['cookies'], 'cookies-session-without-secure-flag');
});

t.test('an untrusted certificate is graded, with the invalid-certificate penalty (B+ / 80)', async (t) => {
  const services = await scanner(t, { trustCa: false });
  const site = await startSite(t, tls, HARDENED_HEADERS);
  const { rating } = await runScan(services, `${site.origin}/`, {
    siteId: null,
    trigger: 'public',
    httpUrl: await closedHttpUrl(),
  });
  t.match(rating, { grade: 'B+', score: 80 });
  t.equal(rating.tests.find((x) => x.name === 'strict-transport-security')!.result, 'hsts-invalid-cert');
});

t.test('wildcard CORS with credentials and a wildcard crossdomain.xml fail the CORS test', async (t) => {
  const services = await scanner(t);
  const site = await startSite(t, tls, {}, '<p>x</p>', (req, res) => {
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'access-control-allow-origin': String(req.headers.origin),
        'access-control-allow-credentials': 'true',
      });
      res.end();
      return true;
    }
    if (req.url === '/crossdomain.xml') {
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end('<cross-domain-policy><allow-access-from domain="*"/></cross-domain-policy>');
      return true;
    }
    return false;
  });
  const { rating } = await runScan(services, `${site.origin}/`, {
    siteId: null,
    trigger: 'public',
    httpUrl: await closedHttpUrl(),
  });
  t.match(
    rating.tests.find((x) => x.name === 'cross-origin-resource-sharing'),
    { result: 'cross-origin-resource-sharing-implemented-with-universal-access', pass: false, score_modifier: -50 },
  );
});

t.test('redirect loops are graded where the chain stands, never a crash', async (t) => {
  const services = await scanner(t);
  const site = await startSite(t, tls, {}, '', (req, res) => {
    if (req.url === '/a' || req.url === '/b') {
      res.writeHead(302, { location: req.url === '/a' ? '/b' : '/a' });
      res.end();
      return true;
    }
    return false;
  });
  const { rating } = await runScan(services, `${site.origin}/a`, {
    siteId: null,
    trigger: 'public',
    httpUrl: await closedHttpUrl(),
  });
  t.match(rating, { grade: 'D', score: 30 }, 'the last 302 is graded: csp −25, hsts −20, xcto −5, xfo −20');
  t.equal(site.requests.filter((r) => r === 'GET /a').length, 1, 'each hop of the loop is fetched once');
});

t.test('bodies over 2 MB, error statuses and malformed responses are a clear scan_failed', async (t) => {
  const services = await scanner(t);
  const huge = await startSite(t, tls, {}, 'x'.repeat(2 * 1024 * 1024 + 10));
  t.equal(
    await reasonOf(
      runScan(services, `${huge.origin}/`, { siteId: null, trigger: 'public', httpUrl: await closedHttpUrl() }),
    ),
    'scan_failed',
  );
  const broken = await startSite(t, tls, {}, '', (_req, res) => {
    res.statusCode = 500;
    res.end('oops');
    return true;
  });
  t.equal(
    await reasonOf(
      runScan(services, `${broken.origin}/`, { siteId: null, trigger: 'public', httpUrl: await closedHttpUrl() }),
    ),
    'scan_failed',
  );
  // A TLS server that answers with a malformed header line.
  const raw = await startSite(t, tls, {}, '', (req) => {
    req.socket.end('HTTP/1.1 200 OK\r\nBad Header Without Colon\r\n\r\nhi');
    return true;
  });
  t.equal(
    await reasonOf(
      runScan(services, `${raw.origin}/`, { siteId: null, trigger: 'public', httpUrl: await closedHttpUrl() }),
    ),
    'scan_failed',
  );
});

t.test('private targets are refused by default, and nothing is sent to them', async (t) => {
  const { services } = await openServices(t, { config: { 'fetch.caFile': tls.caFile, 'scan.rescanIntervalHours': 0 } });
  t.equal(services.config.fetch.allowPrivateTargets, false, 'off unless a test turns it on');
  const site = await startSite(t, tls, HARDENED_HEADERS);
  t.equal(
    await reasonOf(runScan(services, `${site.origin}/`, { siteId: null, trigger: 'public' })),
    'scan_target_refused',
  );
  t.same(site.requests, []);
  // Refused before any connection: nothing needs to listen there.
  const relay = createServer();
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const port = (relay.address() as AddressInfo).port;
  relay.close();
  t.equal(
    await reasonOf(runScan(services, `https://localhost:${port}/`, { siteId: null, trigger: 'public' })),
    'scan_target_refused',
  );
});
