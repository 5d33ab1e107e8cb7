import canonicalizeModule from 'canonicalize';

// canonicalize ships CommonJS with an ESM-style declaration; under NodeNext the default import
// is module.exports at run time, which the declaration types as `{ default }`.
const serialize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (
  input: unknown,
) => string | undefined;

/**
 * RFC 8785 (JCS) canonical form of a JSON value: sorted member names, ECMAScript number
 * formatting, minimal string escaping. Throws on values JSON cannot represent.
 */
export function canonicalJson(value: unknown): string {
  const out = serialize(value);
  if (typeof out !== 'string') throw new TypeError('the value has no JSON representation');
  return out;
}
