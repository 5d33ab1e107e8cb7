import t from 'tap';
import { computeClaims, EVIDENCE_LIFETIME_MS, isEvidenceFresh } from '#lib/agents/evidence.js';

t.test('claims are independent and freshness-scoped', async (t) => {
  const day = 86_400_000;
  const dns = {
    type: 'domain-control' as const,
    at: 0,
    expiresAt: EVIDENCE_LIFETIME_MS['domain-control'],
    detail: { domain: 'a.example' },
  };
  const none = computeClaims({ keyProvenAt: null, ownerApprovedAt: null, evidence: [], now: 0 });
  t.same(
    Object.values(none).map((c) => c.status),
    ['declared', 'declared', 'declared', 'declared'],
  );
  const fresh = computeClaims({ keyProvenAt: 5, ownerApprovedAt: 1, evidence: [dns], now: day });
  t.equal(fresh.key_control.status, 'verified');
  t.equal(fresh.owner_accountability.status, 'verified');
  t.equal(fresh.channel_control.status, 'verified');
  t.equal(fresh.descriptor_integrity.status, 'declared', 'domain evidence says nothing about the descriptor');
  const old = computeClaims({ keyProvenAt: 5, ownerApprovedAt: 1, evidence: [dns], now: 31 * day });
  t.equal(old.channel_control.status, 'expired');
  t.ok(old.channel_control.expires_at);
  t.notOk(isEvidenceFresh(dns, dns.expiresAt));
  t.ok(isEvidenceFresh(dns, dns.expiresAt - 1));
});
