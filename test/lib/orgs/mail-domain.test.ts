import t from 'tap';
import {
  addressInDomains,
  checkMailDomain,
  judgeMailDomainRecheck,
  MAIL_DOMAIN_GRACE_MS,
} from '#lib/orgs/mail-domain.js';

t.test('a mail domain is a lower-case name of two or more LDH labels', async (t) => {
  t.same(checkMailDomain(' Acme.Example '), { ok: true, domain: 'acme.example' });
  t.same(checkMailDomain('xn--bcher-kva.example'), { ok: true, domain: 'xn--bcher-kva.example' });
  for (const bad of [
    '',
    'example',
    'a..example',
    '-a.example',
    'a-.example',
    '1.2.3.4',
    '*.a.example',
    'a_b.example',
    7,
  ])
    t.equal(checkMailDomain(bad).ok, false, String(bad));
  t.equal(checkMailDomain(`${'a'.repeat(64)}.example`).ok, false, 'a label is at most 63 characters');
});

t.test('an address lies in a domain only exactly: subdomains count when listed themselves', async (t) => {
  t.equal(addressInDomains('Ann@ACME.example', ['acme.example']), true);
  t.equal(addressInDomains('ann@eu.acme.example', ['acme.example']), false);
  t.equal(addressInDomains('ann@acme.example.evil', ['acme.example']), false);
  t.equal(addressInDomains('acme.example', ['acme.example']), false);
});

t.test('a failing re-check keeps the domain through the grace, then lapses it', async (t) => {
  t.same(judgeMailDomainRecheck({ failingSince: 5 }, true, 100), { action: 'keep', failingSince: null });
  t.same(judgeMailDomainRecheck({ failingSince: null }, false, 100), { action: 'failing', failingSince: 100 });
  t.same(judgeMailDomainRecheck({ failingSince: 100 }, false, 100 + MAIL_DOMAIN_GRACE_MS - 1), {
    action: 'failing',
    failingSince: 100,
  });
  t.same(judgeMailDomainRecheck({ failingSince: 100 }, false, 100 + MAIL_DOMAIN_GRACE_MS), {
    action: 'lapse',
    failingSince: 100,
  });
});
