import t from 'tap';
import { testContentSecurityPolicy, readCsp } from '#lib/scan/index.js';
import { site } from './captures.js';

const cases: Array<[string, string, boolean]> = [
  ["default-src 'none'", 'csp-implemented-with-no-unsafe-default-src-none', true],
  ["default-src 'none'; img-src 'self'", 'csp-implemented-with-no-unsafe-default-src-none', true],
  ["default-src 'self'", 'csp-implemented-with-no-unsafe', true],
  ["default-src 'self'; object-src 'none'", 'csp-implemented-with-no-unsafe', true],
  ["script-src 'self'; object-src 'none'", 'csp-implemented-with-unsafe-inline-in-style-src-only', true],
  [
    "default-src 'self'; style-src 'self' 'unsafe-inline'",
    'csp-implemented-with-unsafe-inline-in-style-src-only',
    true,
  ],
  [
    "default-src 'self'; img-src http://img.example",
    'csp-implemented-with-insecure-scheme-in-passive-content-only',
    true,
  ],
  ["default-src 'self'; script-src 'self' 'unsafe-eval'", 'csp-implemented-with-unsafe-eval', false],
  ["default-src 'self'; script-src 'self' 'unsafe-inline'", 'csp-implemented-with-unsafe-inline', false],
  ["default-src 'self'; script-src 'self' data:", 'csp-implemented-with-unsafe-inline', false],
  ["default-src 'self'; script-src *", 'csp-implemented-with-unsafe-inline', false],
  ["default-src 'self'; script-src https:", 'csp-implemented-with-unsafe-inline', false],
  ["default-src 'self'; object-src *", 'csp-implemented-with-unsafe-inline', false],
  ["img-src 'self'", 'csp-implemented-with-unsafe-inline', false],
  ["default-src 'self'; script-src http://cdn.example", 'csp-implemented-with-insecure-scheme', false],
  ["default-src 'self'; script-src 'nonce-abc123' 'unsafe-inline'", 'csp-implemented-with-no-unsafe', true],
  ["default-src 'self'; script-src 'sha256-abc=' 'unsafe-inline'", 'csp-implemented-with-no-unsafe', true],
  [
    "default-src 'none'; script-src 'nonce-abc' 'strict-dynamic' https: 'unsafe-inline'",
    'csp-implemented-with-no-unsafe-default-src-none',
    true,
  ],
  ["default-src 'self'; script-src 'strict-dynamic'", 'csp-header-invalid', false],
  ["default-src 'self'; default-src 'none'", 'csp-header-invalid', false],
  ['a', 'csp-header-invalid', false],
  ["default-src 'none'; report-uri /a; report-uri /b", 'csp-implemented-but-duplicate-directives', true],
];

t.test('grades each CSP as the Observatory does', async (t) => {
  for (const [policy, result, pass] of cases) {
    const outcome = testContentSecurityPolicy(site([['Content-Security-Policy', policy]]));
    t.equal(outcome.result, result, policy);
    t.equal(outcome.pass, pass, `${policy} pass`);
  }
});

t.test('a missing CSP fails, and a report-only one is named as such', async (t) => {
  t.equal(testContentSecurityPolicy(site([])).result, 'csp-not-implemented');
  t.equal(
    testContentSecurityPolicy(site([['Content-Security-Policy-Report-Only', "default-src 'none'"]])).result,
    'csp-not-implemented-but-reporting-enabled',
  );
});

t.test('a meta policy counts, but without frame-ancestors', async (t) => {
  const body = `<html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-ancestors 'none'"></head></html>`;
  const capture = site([], { body });
  t.equal(testContentSecurityPolicy(capture).result, 'csp-implemented-with-no-unsafe-default-src-none');
  t.notOk(readCsp(capture).meta[0]!.has('frame-ancestors'));
  const onlyFrame = site([], { body: `<meta http-equiv="content-security-policy" content="frame-ancestors 'none'">` });
  t.equal(testContentSecurityPolicy(onlyFrame).result, 'csp-not-implemented');
});

t.test('several policies: a weakness counts only when every policy has it', async (t) => {
  const strict = site([['Content-Security-Policy', "script-src 'unsafe-inline', default-src 'none'"]]);
  t.equal(testContentSecurityPolicy(strict).result, 'csp-implemented-with-no-unsafe-default-src-none');
  const bothWeak = site([
    ['Content-Security-Policy', "script-src 'unsafe-inline'"],
    ['Content-Security-Policy', "script-src 'unsafe-inline' 'self'"],
  ]);
  t.equal(testContentSecurityPolicy(bothWeak).result, 'csp-implemented-with-unsafe-inline');
});

t.test('reports base-uri, form-action and object-src restrictions and strict-dynamic as evidence', async (t) => {
  const outcome = testContentSecurityPolicy(
    site([
      [
        'Content-Security-Policy',
        "default-src 'self'; script-src 'nonce-r4nd0m' 'strict-dynamic'; base-uri 'none'; form-action 'self'; object-src 'none'",
      ],
    ]),
  );
  t.match(outcome.data, {
    strictDynamic: true,
    nonceOrHash: true,
    baseUriRestricted: true,
    formActionRestricted: true,
    objectSrcRestricted: true,
  });
  const loose = testContentSecurityPolicy(site([['Content-Security-Policy', "default-src 'self'; base-uri *"]]));
  t.match(loose.data, { baseUriRestricted: false, formActionRestricted: false });
});

t.test('http pages are not held to the insecure-scheme rules', async (t) => {
  const capture = site([['Content-Security-Policy', "default-src 'self'; script-src http://cdn.example"]]);
  capture.https = null;
  capture.http = [
    {
      url: 'http://www.shop.example/',
      status: 200,
      headers: [['Content-Security-Policy', "default-src 'self'; script-src http://cdn.example"]],
      verified: true,
    },
  ];
  t.equal(testContentSecurityPolicy(capture).result, 'csp-implemented-with-no-unsafe');
});
