import { Counter, type Registry } from 'prom-client';
import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { analyzeScan, UngradableScanError } from '#lib/scan/analyze-scan.js';
import { buildRatingBody, signRating, type Rating } from '#lib/scan/rating.js';
import { randomId } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import { captureSite, type ScanFetch } from './capture-site.js';
import { createScanFetch } from './scan-fetch.js';

export type ScanServices = Pick<
  ControlPlaneServices,
  'storage' | 'events' | 'now' | 'keys' | 'config' | 'metrics' | 'fetcher'
>;

const fetchers = new WeakMap<object, ScanFetch>();

/** The scan's fetch over the control plane's guarded fetcher (`fetch.allowPrivateTargets`, `fetch.caFile`). */
export function scanFetchFor(services: Pick<ControlPlaneServices, 'fetcher'>): ScanFetch {
  let fetch = fetchers.get(services.fetcher);
  if (!fetch) {
    fetch = createScanFetch(services.fetcher);
    fetchers.set(services.fetcher, fetch);
  }
  return fetch;
}
export type ScanTrigger = 'org' | 'public' | 'schedule';

const counters = new WeakMap<Registry, Counter<'trigger' | 'outcome'>>();

/** `kp_scans_total{trigger, outcome}`: every scan run, graded or not. */
function scansCounter(registry: Registry): Counter<'trigger' | 'outcome'> {
  let counter = counters.get(registry);
  if (!counter) {
    counter = new Counter({
      name: 'kp_scans_total',
      help: 'Posture scans run, by trigger and outcome.',
      labelNames: ['trigger', 'outcome'],
      registers: [registry],
    });
    counters.set(registry, counter);
  }
  return counter;
}

/** Registers the scan metric so /metrics lists it from the start. */
export function registerScanMetrics(registry: Registry): void {
  scansCounter(registry);
}

/**
 * Scans one URL: captures it through the guarded fetcher, grades it, signs the Rating with the
 * issuer's key ring and keeps it in the site's history (or as the URL's latest public result).
 */
export async function runScan(
  services: ScanServices,
  url: string,
  options: { siteId: string | null; trigger: ScanTrigger; httpUrl?: string },
): Promise<{ rating: Rating; receipt?: string }> {
  const counter = scansCounter(services.metrics);
  let analysis;
  try {
    const capture = await captureSite(url, {
      fetch: scanFetchFor(services),
      ...(options.httpUrl ? { httpUrl: options.httpUrl } : {}),
    });
    analysis = analyzeScan(capture);
  } catch (error) {
    counter.inc({
      trigger: options.trigger,
      outcome: isKeyplaneError(error) && error.reason === 'scan_target_refused' ? 'refused' : 'failed',
    });
    if (error instanceof UngradableScanError) throw fail('scan_failed', error.message);
    throw error;
  }
  const now = services.now();
  const rating = await signRating(buildRatingBody(analysis, url, new Date(now)), services.keys.current());
  const scanId = randomId('scn');
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.scans.record({
      scanId,
      siteId: options.siteId,
      url,
      grade: rating.grade,
      score: rating.score,
      rating: JSON.stringify(rating),
      scannedAt: now,
    });
    return services.events.record(tx, {
      type: 'scan.completed',
      at: now,
      outcome: 'success',
      scanId,
      siteId: options.siteId,
      grade: rating.grade,
      score: rating.score,
      algorithm: rating.algorithm,
      trigger: options.trigger,
    });
  });
  counter.inc({ trigger: options.trigger, outcome: 'graded' });
  return { rating, ...(receipt ? { receipt } : {}) };
}
