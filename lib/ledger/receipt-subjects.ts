/**
 * The opaque ids a receipt names, as the audit export's `subject` filter finds them
 * (docs/events.md#which-ids-a-receipt-names). Until the index existed, the filter read every
 * receipt's body for the id as a whole JSON string; the index keeps that meaning, made precise:
 *
 * - every string value of the receipt, at any depth (in nested objects such as `actor`, and in
 *   arrays such as `actors`), matched whole;
 * - except the envelope: the top-level `kind`, `at` and `outcome`, and `actor.type`, which name the
 *   receipt's type (the `type` filter), its time (`since`/`until`), its outcome and the kind of
 *   actor, never an id;
 * - and only values a `subject` can be at all: 1 to 200 of `A-Z a-z 0-9 _ . : @ -` (an URL, a
 *   sentence or an empty string is never asked for, so it is never indexed).
 *
 * Member names are never ids (the body scan matched `"identityId"` as a name too; the index does
 * not). The migration that built the index (storage/migrations/*-receipt-subjects) applies the same
 * three rules in SQL to the receipts written before it, and on PostgreSQL to every receipt inserted
 * after it (a trigger); the SQLite store calls this function.
 */

/** What a `subject` may be: an opaque id. */
export const SUBJECT_PATTERN = /^[A-Za-z0-9_.:@-]{1,200}$/;

/** The top-level members that are the receipt's envelope, not ids. */
const ENVELOPE = new Set(['kind', 'at', 'outcome']);

/** Every distinct id the receipt (parsed JSON) names, in the order first met. */
export function receiptSubjects(receipt: unknown): string[] {
  const found = new Set<string>();
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      if (SUBJECT_PATTERN.test(value)) found.add(value);
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item);
    } else if (value !== null && typeof value === 'object') {
      for (const item of Object.values(value)) walk(item);
    }
  };
  if (receipt === null || typeof receipt !== 'object' || Array.isArray(receipt)) {
    walk(receipt);
    return [...found];
  }
  for (const [name, value] of Object.entries(receipt)) {
    if (ENVELOPE.has(name)) continue;
    if (name === 'actor' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [member, inner] of Object.entries(value)) if (member !== 'type') walk(inner);
    } else walk(value);
  }
  return [...found];
}
