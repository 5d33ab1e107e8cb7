import { Resolver } from 'node:dns/promises';

export interface TxtLookupOptions {
  /** `host` or `host:port` of the resolvers to ask; empty = the system's. */
  resolvers?: readonly string[];
  /** Per-try timeout (default 2 s). */
  timeoutMs?: number;
  tries?: number;
}

export type TxtLookupResult = { ok: true; records: string[] } | { ok: false; failure: 'no_records' | 'unreachable' };

/**
 * TXT records at `name`, each record's character-strings joined (RFC 7208 §3.3 style, as the
 * domain-verification BCP draft asks). A fresh `Resolver` per call, never the process-wide
 * `dns.setServers`, so one caller's resolvers never leak into another's. A missing name or no TXT
 * is `no_records`; timeouts and refusals are `unreachable`.
 */
export async function lookupTxt(name: string, options: TxtLookupOptions = {}): Promise<TxtLookupResult> {
  const resolver = new Resolver({ timeout: options.timeoutMs ?? 2000, tries: options.tries ?? 2 });
  if (options.resolvers && options.resolvers.length > 0) resolver.setServers([...options.resolvers]);
  try {
    const records = await resolver.resolveTxt(name);
    return { ok: true, records: records.map((chunks) => chunks.join('')) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENODATA' || code === 'ENOTFOUND') return { ok: false, failure: 'no_records' };
    return { ok: false, failure: 'unreachable' };
  }
}

/** Whether any TXT record at `name` is exactly `expected` (surrounding spaces ignored). */
export async function hasTxtRecord(name: string, expected: string, options: TxtLookupOptions = {}): Promise<boolean> {
  const result = await lookupTxt(name, options);
  return result.ok && result.records.some((record) => record.trim() === expected);
}
