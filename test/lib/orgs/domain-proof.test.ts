import t from 'tap';
import { checkWellKnownAnswer, explainDomainProofFailure } from '#lib/orgs/domain-proof.js';

const where = {
  txtName: '_keyplane.shop.example',
  wellKnownUrl: 'https://shop.example/.well-known/keyplane-site.txt',
  expected: 'keyplane-site=tok',
};

t.test('classifies the well-known answer', async (t) => {
  t.same(checkWellKnownAnswer(200, true), { outcome: 'proved' });
  t.same(checkWellKnownAnswer(200, false), { outcome: 'wrong_content' });
  t.same(checkWellKnownAnswer(404, false), { outcome: 'not_published', status: 404 });
  t.same(checkWellKnownAnswer(410, false), { outcome: 'not_published', status: 410 });
  t.same(checkWellKnownAnswer(503, false), { outcome: 'http_status', status: 503 });
});

t.test('names the actual cause, most telling first', async (t) => {
  const none = { outcome: 'no_records' } as const;
  const notPublished = explainDomainProofFailure(
    { dns: none, wellKnown: { outcome: 'not_published', status: 404 } },
    where,
  );
  t.equal(notPublished.cause, 'not_published');
  t.match(notPublished.message, /no TXT record at _keyplane\.shop\.example/);
  t.match(notPublished.message, /answered 404 \(not published\)/);
  t.match(notPublished.message, /Publish keyplane-site=tok as a TXT record/);

  const certificate = explainDomainProofFailure(
    { dns: none, wellKnown: { outcome: 'certificate_failed', code: 'CERT_HAS_EXPIRED' } },
    where,
  );
  t.equal(certificate.cause, 'certificate_failed');
  t.match(certificate.message, /TLS certificate did not verify \(CERT_HAS_EXPIRED\)/);
  t.notMatch(certificate.message, /Publish/, 'a published file is not asked to be published again');

  const content = explainDomainProofFailure({ dns: none, wellKnown: { outcome: 'wrong_content' } }, where);
  t.equal(content.cause, 'wrong_content');
  t.match(content.message, /was fetched but has no line keyplane-site=tok/);

  const wrongTxt = explainDomainProofFailure(
    { dns: { outcome: 'wrong_value' }, wellKnown: { outcome: 'certificate_failed', code: 'X' } },
    where,
  );
  t.equal(wrongTxt.cause, 'wrong_content', 'a TXT record with another value beats a certificate failure');
  t.match(wrongTxt.message, /TXT records at _keyplane\.shop\.example do not include keyplane-site=tok/);

  const down = explainDomainProofFailure(
    { dns: none, wellKnown: { outcome: 'fetch_failed', detail: 'the target did not answer in time' } },
    where,
  );
  t.equal(down.cause, 'fetch_failed');
  t.match(down.message, /could not be fetched: the target did not answer in time/);
  t.equal(
    explainDomainProofFailure({ dns: none, wellKnown: { outcome: 'http_status', status: 500 } }, where).cause,
    'fetch_failed',
  );
  t.equal(
    explainDomainProofFailure(
      { dns: { outcome: 'unreachable' }, wellKnown: { outcome: 'not_published', status: 404 } },
      where,
    ).cause,
    'fetch_failed',
    'a resolver that did not answer is not "not published"',
  );
});
