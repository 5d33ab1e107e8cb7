import t from 'tap';
import { computeEnforcementStatus } from '#lib/gateway-protocol/enforcement-status.js';

const declared = { hash: 'a'.repeat(64) };
const on = (hash: string, expiresAt = 2000) => ({ expiresAt, config: { version: 1, hash } });

t.test('never green without fresh evidence that matches the declared config', async (t) => {
  t.same(computeEnforcementStatus(null, [on(declared.hash)], 1000), {
    status: 'unknown',
    reason: 'no_config_declared',
  });
  t.same(computeEnforcementStatus(declared, [], 1000), { status: 'unknown', reason: 'no_evidence' });
  t.same(computeEnforcementStatus(declared, [on(declared.hash)], 1000), {
    status: 'green',
    reason: 'enforcing_declared_config',
  });
  t.same(
    computeEnforcementStatus(declared, [on(declared.hash)], 2000),
    { status: 'stale', reason: 'evidence_expired' },
    'exp is exclusive',
  );
  t.same(computeEnforcementStatus(declared, [on(declared.hash), on('b'.repeat(64))], 1000), {
    status: 'stale',
    reason: 'config_mismatch',
  });
  t.same(computeEnforcementStatus(declared, [on(declared.hash), { expiresAt: 2000, config: null }], 1000), {
    status: 'stale',
    reason: 'failing_closed',
  });
  t.same(
    computeEnforcementStatus(declared, [on(declared.hash), on('b'.repeat(64), 500)], 1000),
    { status: 'green', reason: 'enforcing_declared_config' },
    'an expired instance on an old config no longer counts',
  );
});
