import t from 'tap';
import {
  allowsAnyOrigin,
  parseHsts,
  testCookies,
  testCrossOriginResourcePolicy,
  testCrossOriginResourceSharing,
  testRedirection,
  testReferrerPolicy,
  testStrictTransportSecurity,
  testSubresourceIntegrity,
  testXContentTypeOptions,
  testXFrameOptions,
  noPreloadList,
  type CapturedResponse,
} from '#lib/scan/index.js';
import { HOST, ORIGIN, site } from './captures.js';

const preloadAll = () => ({ includeSubDomains: true });

t.test('redirection: every path of the http chain', async (t) => {
  const hop = (url: string, status = 301, location?: string): CapturedResponse => ({
    url,
    status,
    headers: location ? [['Location', location]] : [],
    verified: true,
  });
  const grade = (http: CapturedResponse[] | null) => testRedirection(site([], { http }), noPreloadList);
  t.equal(grade(null).result, 'redirection-not-needed-no-http');
  t.equal(grade([hop(`http://${HOST}/`), hop(`${ORIGIN}/`, 200)]).result, 'redirection-to-https');
  t.equal(grade([hop(`http://${HOST}/`, 200)]).result, 'redirection-missing');
  t.equal(grade([hop(`http://${HOST}/`), hop(`http://other.example/`, 200)]).result, 'redirection-not-to-https');
  t.equal(
    grade([hop(`http://${HOST}/`), hop(`http://${HOST}/x`), hop(`${ORIGIN}/`, 200)]).result,
    'redirection-not-to-https-on-initial-redirection',
  );
  t.equal(grade([hop(`http://${HOST}/`), hop('https://shop.example/', 200)]).result, 'redirection-off-host-from-http');
  t.equal(
    grade([hop(`http://${HOST}/`), { ...hop(`${ORIGIN}/`, 200), verified: false }]).result,
    'redirection-invalid-cert',
  );
  t.equal(
    testRedirection(site([], { http: [hop(`http://${HOST}/`, 200)] }), preloadAll).result,
    'redirection-all-redirects-preloaded',
  );
  t.notOk(grade([hop(`http://${HOST}/`, 200)]).pass);
  t.ok(grade(null).pass);
});

t.test('HSTS: max-age thresholds, invalid headers, certificates and preload eligibility', async (t) => {
  const grade = (value: string | null, opts: { verified?: boolean } = {}) =>
    testStrictTransportSecurity(
      site(value === null ? [] : [['Strict-Transport-Security', value]], opts),
      noPreloadList,
    );
  t.equal(grade('max-age=15552000').result, 'hsts-implemented-max-age-at-least-six-months');
  t.equal(grade('max-age=15551999').result, 'hsts-implemented-max-age-less-than-six-months');
  t.equal(grade(null).result, 'hsts-not-implemented');
  t.equal(grade('includeSubDomains').result, 'hsts-header-invalid');
  t.equal(grade('max-age=1, max-age=2').result, 'hsts-header-invalid');
  t.equal(grade('max-age=abc').result, 'hsts-header-invalid');
  t.equal(grade('max-age=31536000', { verified: false }).result, 'hsts-invalid-cert');
  const noHttps = site([]);
  noHttps.https = null;
  t.equal(testStrictTransportSecurity(noHttps, noPreloadList).result, 'hsts-not-implemented-no-https');
  t.equal(testStrictTransportSecurity(site([]), preloadAll).result, 'hsts-preloaded');
  t.equal(grade('max-age=63072000; includeSubDomains; preload').data['preloadEligible'], true);
  t.equal(grade('max-age=63072000; includeSubDomains').data['preloadEligible'], false);
  t.equal(grade('max-age=15552000; includeSubDomains; preload').data['preloadEligible'], false);
  t.same(parseHsts('max-age="600"; preload'), { maxAge: 600, includeSubDomains: false, preload: true });
});

t.test('cookies: the worst finding over every cookie wins', async (t) => {
  const grade = (cookies: string[], hsts = false) =>
    testCookies(site(cookies.map((c) => ['Set-Cookie', c] as [string, string])), hsts);
  t.equal(grade([]).result, 'cookies-not-found');
  t.equal(
    grade(['sessionid=1; Secure; HttpOnly; SameSite=Lax']).result,
    'cookies-secure-with-httponly-sessions-and-samesite',
  );
  t.equal(grade(['sessionid=1; Secure; HttpOnly']).result, 'cookies-secure-with-httponly-sessions');
  t.equal(grade(['theme=dark; SameSite=Lax']).result, 'cookies-without-secure-flag');
  t.equal(grade(['theme=dark; SameSite=Lax'], true).result, 'cookies-without-secure-flag-but-protected-by-hsts');
  t.equal(
    grade(['sessionid=1; HttpOnly; SameSite=Lax'], true).result,
    'cookies-session-without-secure-flag-but-protected-by-hsts',
  );
  t.equal(grade(['sessionid=1; HttpOnly; SameSite=Lax']).result, 'cookies-session-without-secure-flag');
  t.equal(grade(['sessionid=1; Secure; SameSite=Lax']).result, 'cookies-session-without-httponly-flag');
  t.equal(grade(['csrftoken=1; Secure']).result, 'cookies-anticsrf-without-samesite-flag');
  t.equal(grade(['a=1; Secure; SameSite=Bogus']).result, 'cookies-samesite-flag-invalid');
  t.equal(grade(['a=1; SameSite=None'], true).result, 'cookies-samesite-flag-invalid');
  t.equal(
    grade(['theme=1; Secure; SameSite=Lax', 'sessionid=1; Secure; SameSite=Lax']).result,
    'cookies-session-without-httponly-flag',
  );
  t.ok(grade(['sessionid=1; Secure; HttpOnly']).pass);
  t.notOk(grade(['theme=dark']).pass);
});

t.test('cookies: browsers drop prefixed cookies that break their prefix rules', async (t) => {
  const outcome = testCookies(
    site([
      ['Set-Cookie', '__Host-sess=1; Secure; HttpOnly; Path=/; Domain=shop.example; SameSite=Lax'],
      ['Set-Cookie', '__Secure-login=1; HttpOnly; SameSite=Lax'],
      ['Set-Cookie', '__Host-id=1; Secure; Path=/app; SameSite=Lax'],
      ['Set-Cookie', '__Host-ok=1; Secure; HttpOnly; Path=/; SameSite=Lax'],
    ]),
    true,
  );
  t.same(Object.keys(outcome.data['prefixViolations'] as object).sort(), [
    '__Host-id',
    '__Host-sess',
    '__Secure-login',
  ]);
  t.equal(outcome.result, 'cookies-secure-with-httponly-sessions-and-samesite');
  const noSecure = testCookies(site([['Set-Cookie', '__Host-x=1; Path=/']]), true);
  t.equal(noSecure.result, 'cookies-not-found');
});

t.test('X-Content-Type-Options', async (t) => {
  const grade = (v: string | null) => testXContentTypeOptions(site(v === null ? [] : [['X-Content-Type-Options', v]]));
  t.equal(grade('nosniff').result, 'x-content-type-options-nosniff');
  t.equal(grade(' NoSniff ').result, 'x-content-type-options-nosniff');
  t.equal(grade('sniff').result, 'x-content-type-options-header-invalid');
  t.equal(grade(null).result, 'x-content-type-options-not-implemented');
  t.notOk(grade(null).pass);
});

t.test('framing: X-Frame-Options or a restrictive frame-ancestors in a header', async (t) => {
  const grade = (headers: Array<[string, string]>, body?: string) =>
    testXFrameOptions(site(headers, body ? { body } : {}));
  t.equal(grade([['X-Frame-Options', 'DENY']]).result, 'x-frame-options-sameorigin-or-deny');
  t.equal(grade([['X-Frame-Options', 'sameorigin']]).result, 'x-frame-options-sameorigin-or-deny');
  t.equal(grade([['X-Frame-Options', 'ALLOW-FROM https://a.example']]).result, 'x-frame-options-header-invalid');
  t.equal(grade([['X-Frame-Options', 'maybe']]).result, 'x-frame-options-header-invalid');
  t.equal(grade([]).result, 'x-frame-options-not-implemented');
  t.equal(grade([['Content-Security-Policy', "frame-ancestors 'self'"]]).result, 'x-frame-options-implemented-via-csp');
  t.equal(
    grade([['Content-Security-Policy', 'frame-ancestors *']]).result,
    'x-frame-options-not-implemented',
    'a wildcard does not count',
  );
  t.equal(
    grade([], `<meta http-equiv="Content-Security-Policy" content="default-src 'self'; frame-ancestors 'none'">`)
      .result,
    'x-frame-options-not-implemented',
    'browsers ignore frame-ancestors in meta',
  );
});

t.test('Referrer-Policy from header and meta; the last valid token wins', async (t) => {
  const grade = (headers: Array<[string, string]>, body?: string) =>
    testReferrerPolicy(site(headers, body ? { body } : {}));
  t.equal(grade([['Referrer-Policy', 'no-referrer']]).result, 'referrer-policy-private');
  t.equal(grade([['Referrer-Policy', 'strict-origin-when-cross-origin']]).result, 'referrer-policy-private');
  t.equal(grade([['Referrer-Policy', 'unsafe-url']]).result, 'referrer-policy-unsafe');
  t.equal(grade([['Referrer-Policy', 'no-referrer, unsafe-url']]).result, 'referrer-policy-unsafe');
  t.equal(grade([['Referrer-Policy', 'unsafe-url, bogus, same-origin']]).result, 'referrer-policy-private');
  t.equal(grade([['Referrer-Policy', 'bogus']]).result, 'referrer-policy-header-invalid');
  t.equal(grade([]).result, 'referrer-policy-not-implemented');
  t.ok(grade([]).pass);
  t.equal(grade([], '<meta name="referrer" content="origin">').result, 'referrer-policy-unsafe');
});

t.test('Cross-Origin-Resource-Policy', async (t) => {
  const grade = (vs: string[]) =>
    testCrossOriginResourcePolicy(site(vs.map((v) => ['Cross-Origin-Resource-Policy', v] as [string, string])));
  t.equal(grade(['same-origin']).result, 'corp-implemented-with-same-origin');
  t.equal(grade(['same-site']).result, 'corp-implemented-with-same-site');
  t.equal(grade(['cross-origin']).result, 'corp-implemented-with-cross-origin');
  t.equal(grade([]).result, 'corp-not-implemented');
  t.equal(grade(['nope']).result, 'corp-header-invalid');
  t.equal(grade(['same-origin', 'same-origin']).result, 'corp-header-invalid', 'a repeated header is invalid');
});

t.test('CORS: credentials with an echoed origin, and wildcard policy files', async (t) => {
  const origin = 'https://scan.keyplane.invalid';
  const grade = (cors?: Array<[string, string]>) => testCrossOriginResourceSharing(site([], cors ? { cors } : {}));
  t.equal(grade().result, 'cross-origin-resource-sharing-not-implemented');
  t.equal(
    grade([['Access-Control-Allow-Origin', '*']]).result,
    'cross-origin-resource-sharing-implemented-with-public-access',
  );
  t.equal(
    grade([['Access-Control-Allow-Origin', 'https://app.example']]).result,
    'cross-origin-resource-sharing-implemented-with-restricted-access',
  );
  t.equal(
    grade([['Access-Control-Allow-Origin', origin]]).result,
    'cross-origin-resource-sharing-implemented-with-restricted-access',
  );
  const universal = grade([
    ['Access-Control-Allow-Origin', origin],
    ['Access-Control-Allow-Credentials', 'true'],
  ]);
  t.equal(universal.result, 'cross-origin-resource-sharing-implemented-with-universal-access');
  t.notOk(universal.pass);
  const flash = site([]);
  flash.crossdomain = {
    url: `${ORIGIN}/crossdomain.xml`,
    status: 200,
    headers: [],
    verified: true,
    body: '<cross-domain-policy><allow-access-from domain="*"/></cross-domain-policy>',
  };
  t.equal(
    testCrossOriginResourceSharing(flash).result,
    'cross-origin-resource-sharing-implemented-with-universal-access',
  );
  const silverlight = site([]);
  silverlight.clientaccesspolicy = {
    url: `${ORIGIN}/clientaccesspolicy.xml`,
    status: 200,
    headers: [],
    verified: true,
    body: '<access-policy><cross-domain-access><policy><allow-from><domain uri="*"/></allow-from></policy></cross-domain-access></access-policy>',
  };
  t.equal(
    testCrossOriginResourceSharing(silverlight).result,
    'cross-origin-resource-sharing-implemented-with-universal-access',
  );
  t.notOk(
    allowsAnyOrigin(
      '<cross-domain-policy><allow-access-from domain="*.shop.example"/></cross-domain-policy>',
      'crossdomain',
    ),
  );
});

t.test('SRI: scripts from other domains need integrity and https', async (t) => {
  const grade = (body: string, headers: Array<[string, string]> = []) =>
    testSubresourceIntegrity(site(headers, { body }));
  t.equal(grade('<p>hi</p>').result, 'sri-not-implemented-but-no-scripts-loaded');
  t.equal(
    grade('<script src="/app.js"></script>').result,
    'sri-not-implemented-but-all-scripts-loaded-from-secure-origin',
  );
  t.equal(
    grade('<script src="https://static.shop.example/app.js"></script>').result,
    'sri-not-implemented-but-all-scripts-loaded-from-secure-origin',
  );
  t.equal(
    grade('<script src="/app.js" integrity="sha384-x"></script>').result,
    'sri-implemented-and-all-scripts-loaded-securely',
  );
  t.equal(
    grade('<script src="https://cdn.example.net/a.js" integrity="sha384-x" crossorigin="anonymous"></script>').result,
    'sri-implemented-and-external-scripts-loaded-securely',
  );
  t.equal(
    grade('<script src="https://cdn.example.net/a.js"></script>').result,
    'sri-not-implemented-but-external-scripts-loaded-securely',
  );
  t.equal(
    grade('<script src="http://cdn.example.net/a.js" integrity="sha384-x"></script>').result,
    'sri-implemented-but-external-scripts-not-loaded-securely',
  );
  t.equal(
    grade('<script src="http://cdn.example.net/a.js"></script>').result,
    'sri-not-implemented-and-external-scripts-not-loaded-securely',
  );
  t.equal(
    grade('<script src="//cdn.example.net/a.js"></script>').result,
    'sri-not-implemented-and-external-scripts-not-loaded-securely',
  );
  t.equal(grade('{"a":1}', [['Content-Type', 'application/json']]).result, 'sri-not-implemented-response-not-html');
  t.equal(
    grade('<script src="https://cdn.example.net/a.js"</scr<<ipt>>').result.startsWith('sri-'),
    true,
    'broken markup still grades',
  );
});
