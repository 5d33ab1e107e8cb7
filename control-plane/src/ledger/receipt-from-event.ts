import { randomHex } from '#lib/crypto/random.js';
import type { Receipt } from '#lib/ledger/receipt.js';
import type { Actor, DomainEvent } from '../events/types.js';

// Event fields are opaque ids by contract (events/types.ts); this is a second fence, so that a
// field added later under a secret-sounding name never reaches a receipt.
const NEVER_RECEIPTED = /secret|token|password|passphrase|cookie|^code$|^codes$|^otp$|^email$|^address$/i;

type Scalar = string | number | boolean | null;

function isScalar(value: unknown): value is Scalar {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

/**
 * Turns a domain event into its receipt: `kind` (the event type), `at` (RFC 3339), `outcome`,
 * a 128-bit random `nonce`, and the event's own fields (opaque ids, counts, flags). The nonce
 * makes the hash, which is the receipt's only address, impossible to guess from what it says
 * and distinct for two identical events in the same millisecond.
 */
export function receiptFromEvent(event: DomainEvent, nonce: string = randomHex(16)): Receipt {
  const { type, at, outcome, actor: _actor, ...fields } = event as DomainEvent & Record<string, unknown>;
  const receipt: Receipt = { kind: type, at: new Date(at).toISOString(), outcome, nonce, actor: actorOf(event) };
  for (const [name, value] of Object.entries(fields)) {
    if (name in receipt || NEVER_RECEIPTED.test(name)) continue;
    if (isScalar(value)) receipt[name] = value;
    else if (Array.isArray(value) && value.every(isScalar)) receipt[name] = [...value];
  }
  return receipt;
}

/**
 * The event's `actor`, or for an event that does not say: the admin token where `by` is
 * `admin`, else the person the event names (`actorIdentityId`, then a `by` that is an identity
 * id, then `identityId`), else Keyplane itself.
 */
export function actorOf(event: DomainEvent): Actor {
  const { actor } = event;
  if (actor) return actor.id === undefined ? { type: actor.type } : { type: actor.type, id: actor.id };
  const fields = event as DomainEvent & { by?: unknown; actorIdentityId?: unknown; identityId?: unknown };
  if (fields.by === 'admin') return { type: 'admin_token' };
  if (typeof fields.actorIdentityId === 'string') return { type: 'person', id: fields.actorIdentityId };
  if (typeof fields.by === 'string' && fields.by !== 'session' && fields.by !== 'self' && fields.by !== 'system')
    return { type: 'person', id: fields.by };
  if (typeof fields.identityId === 'string') return { type: 'person', id: fields.identityId };
  return { type: 'system' };
}
