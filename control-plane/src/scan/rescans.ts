import { randomId } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import { runScan, type ScanServices } from './run-scan.js';

export type RescanServices = ScanServices & Pick<ControlPlaneServices, 'state'>;

const LEASE_KEY = 'scan:rescan-lease';
const CHECK_EVERY_MS = 15 * 60_000;

/**
 * One pass of the daily rescans: every primary site whose last scan is older than the interval
 * is scanned again. Only the replica holding the lease in shared state runs a pass, so several
 * control planes on one Redis never scan a site twice. Returns the site ids scanned.
 */
export async function rescanDueSites(services: RescanServices, holder: string = randomId('rsc')): Promise<string[]> {
  const intervalMs = services.config.scan.rescanIntervalHours * 3_600_000;
  if (intervalMs === 0) return [];
  if (!(await services.state.setIfAbsent(LEASE_KEY, holder, CHECK_EVERY_MS))) return [];
  const scanned: string[] = [];
  try {
    for (const site of await services.storage.orgs.primarySites()) {
      const latest = await services.storage.scans.latestForSite(site.siteId);
      if (latest && services.now() - latest.scannedAt < intervalMs) continue;
      try {
        await runScan(services, site.url, { siteId: site.siteId, trigger: 'schedule' });
        scanned.push(site.siteId);
      } catch {
        // A site that cannot be graded today keeps its last Rating, which turns stale on its own.
      }
    }
  } finally {
    if ((await services.state.get(LEASE_KEY)) === holder) await services.state.del(LEASE_KEY);
  }
  return scanned;
}

/** Runs {@link rescanDueSites} every 15 minutes until the returned function is called. */
export function startRescans(services: RescanServices): () => void {
  const holder = randomId('rsc');
  const timer = setInterval(() => void rescanDueSites(services, holder).catch(() => undefined), CHECK_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
