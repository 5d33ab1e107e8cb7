import { fail } from '../errors/keyplane-error.js';

/** The request headers a CSRF decision reads. */
export interface RequestOriginHeaders {
  /** `Sec-Fetch-Site` (Fetch Metadata), when the browser sent it. */
  secFetchSite: string | undefined;
  origin: string | undefined;
}

export interface RequestOriginRule {
  /** The service's own origin (`https://id.example.com`). */
  expectedOrigin: string;
  /**
   * A request with neither Fetch Metadata nor an `Origin` is refused too. True where a session
   * acts (a browser always says where a state-changing request came from); false on the sign-in
   * forms, whose API callers send neither and cannot act for anyone.
   */
  originRequired: boolean;
}

/**
 * The CSRF rule of every HTML form and state-changing browser request (docs/security.md#csrf-on-forms).
 * Fetch Metadata first: `same-origin` (or `none`, a request the person typed or bookmarked) passes and any other value (`same-site`, `cross-site`) fails, because
 * pages answer with `Referrer-Policy: no-referrer` and Chromium then sends `Origin: null` on their
 * own same-origin form posts. Without Fetch Metadata, an `Origin` that is present and not `null`
 * must be ours. `Origin: null` without Fetch Metadata is refused: it is what an opaque origin (a
 * sandboxed frame) sends, and a browser too old for Fetch Metadata has the JavaScript pages.
 */
export function checkRequestOrigin(headers: RequestOriginHeaders, rule: RequestOriginRule): void {
  const refusal = originRefusal(headers, rule);
  if (refusal !== null) throw fail('origin_mismatch', refusal);
}

/** Why {@link checkRequestOrigin} would refuse the request, or null when it passes. */
export function originRefusal(headers: RequestOriginHeaders, rule: RequestOriginRule): string | null {
  const site = headers.secFetchSite?.trim().toLowerCase();
  if (site === 'same-origin' || site === 'none') return null;
  if (site !== undefined && site !== '') return 'this request came from another site';
  const origin = headers.origin;
  if (origin === undefined)
    return rule.originRequired ? 'a signed-in request that changes state must carry an Origin header' : null;
  return origin === rule.expectedOrigin ? null : 'this request came from another origin';
}
