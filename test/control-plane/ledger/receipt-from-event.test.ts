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
    kid: 'k',
    retired: null,
    list: ['x', 1],
  });
});
