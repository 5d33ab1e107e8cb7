import { fail } from '../errors/keyplane-error.js';

/** A receipt type (`passkey.added`), a prefix (`org.*`), or every receipt (`*`). */
const FILTER = /^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$/;
const MAX_FILTERS = 50;

/** The `events` of a webhook, checked: 1 to 50 distinct types or `prefix.*` patterns. */
export function checkEventFilters(input: unknown): string[] {
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_FILTERS)
    throw fail('invalid_request', `events must list 1 to ${MAX_FILTERS} receipt types or prefixes (org.*)`);
  for (const entry of input)
    if (typeof entry !== 'string' || entry.length > 100 || !FILTER.test(entry))
      throw fail('invalid_request', 'each of events is a receipt type (passkey.added), a prefix (org.*) or *');
  return [...new Set(input as string[])];
}

/** Whether a receipt of type `kind` passes the filters: an exact type, or a `prefix.*` it starts with. */
export function matchesEventFilter(filters: readonly string[], kind: string): boolean {
  return filters.some(
    (filter) => filter === '*' || filter === kind || (filter.endsWith('.*') && kind.startsWith(filter.slice(0, -1))),
  );
}
