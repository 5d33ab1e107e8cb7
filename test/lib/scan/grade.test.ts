import t from 'tap';
import { analyzeScan, gradeForScore, scoreModifiers, SCAN_ALGORITHM, UngradableScanError } from '#lib/scan/index.js';
import { HARDENED, HOST, hardenedWith, site } from './captures.js';

t.test('the grade chart: floor to a multiple of 5, A+ from 100, never below 0', async (t) => {
  const expected: Array<[number, string]> = [
    [135, 'A+'],
    [100, 'A+'],
    [99, 'A'],
    [90, 'A'],
    [89, 'A-'],
    [85, 'A-'],
    [80, 'B+'],
    [79, 'B'],
    [70, 'B'],
    [65, 'B-'],
    [60, 'C+'],
    [55, 'C'],
    [50, 'C'],
    [45, 'C-'],
    [40, 'D+'],
    [35, 'D'],
    [30, 'D'],
    [25, 'D-'],
    [24, 'F'],
    [0, 'F'],
    [-20, 'F'],
  ];
  for (const [score, grade] of expected) t.equal(gradeForScore(score), grade, String(score));
});

t.test('bonuses count only when the penalties leave at least 90', async (t) => {
  t.same(scoreModifiers([10, 5, -10]), { score: 105, grade: 'A+' });
  t.same(scoreModifiers([10, 5, -15]), { score: 85, grade: 'A-' });
  t.same(scoreModifiers([-50, -50, -50, 10]), { score: 0, grade: 'F' });
});

// Reference results of the MDN HTTP Observatory's algorithm on the same responses (its modifiers
// per result; the hardened and bare sites are the ones run side by side in docs/scan.md).
t.test('grades a varied set of captured sites as the Observatory does', async (t) => {
  const hardened = analyzeScan(site(HARDENED));
  t.equal(hardened.algorithm, SCAN_ALGORITHM);
  t.same([hardened.grade, hardened.score, hardened.testsPassed], ['A+', 135, 10], 'hardened: A+ / 135');

  const untrusted = analyzeScan(site(HARDENED, { verified: false, http: null }));
  t.same([untrusted.grade, untrusted.score], ['B+', 80], 'untrusted certificate: hsts-invalid-cert drops the bonuses');

  const bare = analyzeScan({
    url: `https://${HOST}/`,
    http: [
      {
        url: `http://${HOST}/`,
        status: 200,
        verified: true,
        headers: [
          ['Content-Type', 'text/html'],
          ['Set-Cookie', 'sessionid=1'],
        ],
        body: '<script src="http://cdn.example.net/x.js"></script>',
      },
    ],
    https: null,
    cors: null,
    corsOrigin: 'https://scan.keyplane.invalid',
    crossdomain: null,
    clientaccesspolicy: null,
  });
  t.same([bare.grade, bare.score], ['F', 0], 'bare http site: F / 0');
  t.same(Object.fromEntries(bare.tests.filter((x) => x.score_modifier !== 0).map((x) => [x.name, x.score_modifier])), {
    'content-security-policy': -25,
    cookies: -40,
    redirection: -20,
    'strict-transport-security': -20,
    'subresource-integrity': -50,
    'x-content-type-options': -5,
    'x-frame-options': -20,
  });

  const cliff = analyzeScan(
    site([
      ['Content-Security-Policy', "default-src 'self'; frame-ancestors 'self'"],
      ['Strict-Transport-Security', 'max-age=31536000'],
      ['X-Content-Type-Options', 'nosniff'],
      ['Referrer-Policy', 'strict-origin-when-cross-origin'],
      ['Cross-Origin-Resource-Policy', 'same-site'],
      ['Set-Cookie', 'sessionid=1; Secure; SameSite=Lax'],
    ]),
  );
  t.same([cliff.grade, cliff.score], ['B', 70], 'a session cookie without HttpOnly: uncurved 70, no bonuses');

  const fixed = analyzeScan(site(hardenedWith('Set-Cookie', 'sessionid=1; Secure; HttpOnly')));
  t.same([fixed.grade, fixed.score], ['A+', 130], 'no SameSite: no cookie bonus');

  const typical = analyzeScan(
    site(
      [
        ['Strict-Transport-Security', 'max-age=300'],
        ['X-Frame-Options', 'SAMEORIGIN'],
      ],
      { body: '<script src="https://cdn.example.net/a.js"></script>' },
    ),
  );
  // csp -25, hsts -10, xcto -5, sri -5 → 55 (xfo +5 does not count)
  t.same([typical.grade, typical.score], ['C', 55], 'a typical site with short HSTS and an external script');

  const almost = analyzeScan(
    site(
      hardenedWith('Content-Security-Policy', "default-src 'self'; img-src http://img.example; frame-ancestors 'none'"),
    ),
  );
  // csp -10 (pass), cookies +5, referrer +5, xfo +5, corp +10 → 90 uncurved, 115 with bonuses
  t.same([almost.grade, almost.score], ['A+', 115], 'a passing −10 still leaves 90, so the bonuses count');
});

t.test('refuses to grade a site that is down or answers with an error', async (t) => {
  const down = site([]);
  down.http = null;
  down.https = null;
  t.throws(() => analyzeScan(down), UngradableScanError);
  const broken = site([]);
  broken.https![0]!.status = 500;
  try {
    analyzeScan(broken);
    t.fail('graded a 500');
  } catch (error) {
    t.equal((error as UngradableScanError).kind, 'unexpected_status');
  }
  const forbidden = site(HARDENED);
  forbidden.https![0]!.status = 403;
  t.equal(analyzeScan(forbidden).grade, 'A+', '401 and 403 are graded');
});
