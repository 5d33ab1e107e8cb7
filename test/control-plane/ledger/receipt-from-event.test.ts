import t from 'tap';
import type { DomainEvent } from '../../../control-plane/src/events/types.js';
import { receiptFromEvent } from '../../../control-plane/src/ledger/receipt-from-event.js';

t.test('a receipt carries kind, RFC 3339 time, outcome, a nonce and the event ids', async (t) => {
  const event: DomainEvent = {
    type: 'keys.rotated',
    at: Date.parse('2026-11-22T12:00:00.5Z'),
    outcome: 'success',
    kid: 'k2',
    retired: null,
  };
  const receipt = receiptFromEvent(event, '00'.repeat(16));
  t.same(receipt, {
    kind: 'keys.rotated',
    at: '2026-11-22T12:00:00.500Z',
    outcome: 'success',
    nonce: '00'.repeat(16),
    actor: { type: 'system' },
    kid: 'k2',
    retired: null,
  });
  const a = receiptFromEvent(event);
  const b = receiptFromEvent(event);
  t.match(a.nonce, /^[0-9a-f]{32}$/);
  t.not(a.nonce, b.nonce, 'two identical events get distinct receipts');
});

t.test('never copies a secret-named field, an object, or over the fixed members', async (t) => {
  const event = {
    type: 'keys.rotated',
    at: 0,
    outcome: 'failure',
    kid: 'k',
    retired: null,
    token: 't',
    clientSecret: 's',
    code: '123456',
    email: 'a@example.com',
    password: 'p',
    sessionCookie: 'c',
    nested: { a: 1 },
    list: ['x', 1],
    kind: 'forged',
    nonce: 'forged',
    undef: undefined,
    nan: Number.NaN,
  } as unknown as DomainEvent;
  const receipt = receiptFromEvent(event, 'ff'.repeat(16));
  t.same(receipt, {
    kind: 'keys.rotated',
    at: '1970-01-01T00:00:00.000Z',
    outcome: 'failure',
    nonce: 'ff'.repeat(16),
    actor: { type: 'system' },
    kid: 'k',
    retired: null,
    list: ['x', 1],
  });
});

t.test('actor: as the event says, else derived from what it names', async (t) => {
  const at = 0;
  const outcome = 'success' as const;
  const actorOfReceipt = (event: DomainEvent) => receiptFromEvent(event).actor;
  t.same(actorOfReceipt({ type: 'account.enabled', at, outcome, identityId: 'idn_a', by: 'admin' }), {
    type: 'admin_token',
  });
  t.same(actorOfReceipt({ type: 'org.created', at, outcome, orgId: 'org_1', by: 'idn_owner' }), {
    type: 'person',
    id: 'idn_owner',
  });
  t.same(actorOfReceipt({ type: 'passkey.added', at, outcome, identityId: 'idn_b', credId: 'c' }), {
    type: 'person',
    id: 'idn_b',
  });
  t.same(
    actorOfReceipt({
      type: 'api.removed',
      at,
      outcome,
      apiId: 'api_1',
      orgId: null,
      actor: { type: 'admin_token' },
    }),
    { type: 'admin_token' },
  );
  const forged = { type: 'keys.rotated', at, outcome, kid: 'k', retired: null, actor: { type: 'system', extra: 'x' } };
  t.same(actorOfReceipt(forged as unknown as DomainEvent), { type: 'system' }, 'only type and id are kept');
});
