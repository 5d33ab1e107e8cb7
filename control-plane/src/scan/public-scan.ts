import { fail } from '#lib/errors/keyplane-error.js';
import { enforceLimit, rateLimited } from '#lib/errors/rate-limited.js';
import { checkSiteUrl } from '#lib/orgs/roles.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import type { Rating } from '#lib/scan/rating.js';
import type { ControlPlaneServices } from '../context.js';
import { runScan, type ScanServices } from './run-scan.js';

export type PublicScanServices = ScanServices & Pick<ControlPlaneServices, 'state'>;

const HOUR_MS = 3_600_000;
// Longer than any scan can take (the capture's own budget is 10 s), so a crashed replica's mark expires.
const IN_FLIGHT_MS = 30_000;

/** A URL the public scan accepts: https with a host name, no credentials, no IP literal. */
export function checkScanUrl(raw: unknown): { url: string; host: string } {
  const checked = checkSiteUrl(raw);
  if (!checked.ok)
    throw fail('scan_target_refused', `this URL cannot be scanned (${checked.refusal.replace('_', ' ')})`);
  return { url: checked.url, host: checked.host };
}

/**
 * The anonymous scan. A recent result of the same URL is answered from storage, so one site
 * cannot be hammered through us; otherwise the caller's address and the target host are each
 * throttled, and one scan per URL runs at a time across replicas.
 */
export async function publicScan(
  services: PublicScanServices,
  raw: unknown,
  clientIp: string,
): Promise<{ rating: Rating; cached: boolean; receipt?: string }> {
  const limiter = new RateLimiter(services.state);
  enforceLimit(
    await limiter.hit('scan-ip', clientIp, { max: services.config.scan.publicPerIpPerHour, windowMs: HOUR_MS }),
    'too many scans from this address; try again later',
  );
  const { url, host } = checkScanUrl(raw);
  const latest = await services.storage.scans.latestPublic(url);
  if (latest && services.now() - latest.scannedAt < services.config.scan.cacheSeconds * 1000) {
    return { rating: JSON.parse(latest.rating) as Rating, cached: true };
  }
  enforceLimit(
    await limiter.hit('scan-host', host, { max: services.config.scan.publicPerHostPerHour, windowMs: HOUR_MS }),
    'this site was scanned often lately; try again later',
  );
  const mark = `scan:inflight:${url}`;
  if (!(await services.state.setIfAbsent(mark, '1', IN_FLIGHT_MS))) {
    throw rateLimited(10_000, 'a scan of this URL is running; ask again in a few seconds');
  }
  try {
    const result = await runScan(services, url, { siteId: null, trigger: 'public' });
    return { ...result, cached: false };
  } finally {
    await services.state.del(mark);
  }
}

/** The newest public result for a URL, or null. */
export async function latestPublicRating(
  services: Pick<ControlPlaneServices, 'storage'>,
  raw: unknown,
): Promise<Rating | null> {
  const { url } = checkScanUrl(raw);
  const latest = await services.storage.scans.latestPublic(url);
  return latest ? (JSON.parse(latest.rating) as Rating) : null;
}
