/**
 * Typed domain events. Handlers record what happened; the ledger turns events into receipts
 * and metrics count them, by subscribing here rather than being called from handlers.
 * Every kind is listed in docs/events.md. Fields are opaque ids only: never a secret, token,
 * code or raw email address.
 */
interface EventBase {
  /** Milliseconds since the epoch. */
  at: number;
  outcome: 'success' | 'failure';
}

export type DomainEvent =
  | (EventBase & { type: 'keys.rotated'; kid: string; retired: string | null });

export type DomainEventType = DomainEvent['type'];
