import type { Rating } from '#lib/scan/rating.js';
import type { ControlPlaneServices } from '../context.js';
import type { OrgSite, StoredOrg } from '../storage/interface.js';

/** A scan older than 30 days is stale and never shown as current (docs/scan.md): a site changes. */
export const STALE_AFTER_MS = 30 * 86_400_000;

export interface SiteStatus {
  site: OrgSite;
  org: StoredOrg;
  verified: boolean;
  rating: Rating | null;
  stale: boolean;
}

/** What the verification page and the seal show for a site. */
export async function loadSiteStatus(
  services: Pick<ControlPlaneServices, 'storage' | 'now'>,
  siteId: string,
): Promise<SiteStatus | null> {
  const site = await services.storage.orgs.site(siteId);
  if (!site) return null;
  const org = await services.storage.orgs.get(site.orgId);
  if (!org) return null;
  const latest = await services.storage.scans.latestForSite(siteId);
  const rating = latest ? (JSON.parse(latest.rating) as Rating) : null;
  return {
    site,
    org,
    verified: site.verifiedAt !== null,
    rating,
    stale: latest !== null && services.now() - latest.scannedAt > STALE_AFTER_MS,
  };
}

export type SiteState = 'current' | 'stale' | 'unscanned' | 'unverified';

/** The public verification view of a site (`/verify/{siteId}?format=json`), or null for an unknown site. */
export async function siteVerification(services: Pick<ControlPlaneServices, 'storage' | 'now'>, siteId: string) {
  const status = await loadSiteStatus(services, siteId);
  if (!status) return null;
  const state: SiteState = !status.verified
    ? 'unverified'
    : !status.rating
      ? 'unscanned'
      : status.stale
        ? 'stale'
        : 'current';
  return {
    status,
    view: {
      siteId,
      url: status.site.url,
      org: { slug: status.org.slug, name: status.org.name },
      verified: status.verified,
      status: state,
      rating: status.rating,
    },
  };
}

/**
 * The site a seal on a page of `origin` stands for: a registered site with that origin whose
 * org proved control of the domain (the most recently proved one, should two orgs have).
 */
export async function siteForOrigin(
  services: Pick<ControlPlaneServices, 'storage'>,
  origin: string,
): Promise<OrgSite | null> {
  const sites = (await services.storage.orgs.sitesByOrigin(origin)).filter((s) => s.verifiedAt !== null);
  sites.sort((a, b) => (b.verifiedAt ?? 0) - (a.verifiedAt ?? 0));
  return sites[0] ?? null;
}

/**
 * The seal script: it asks our seal endpoint about the embedding page's own origin, without
 * cookies or referrer, and draws a small link to the verification page in a shadow root (no
 * innerHTML, no third-party requests). A page that is not a verified site gets no badge.
 */
export function sealScript(issuer: string): string {
  return `(function () {
  'use strict';
  var script = document.currentScript;
  var base = ${JSON.stringify(issuer)};
  if (!script || !window.fetch) return;
  var holder = document.createElement('span');
  holder.setAttribute('data-keyplane-seal', 'loading');
  script.parentNode.insertBefore(holder, script);
  fetch(base + '/embed/seal.json?origin=' + encodeURIComponent(location.origin), { credentials: 'omit', referrerPolicy: 'no-referrer', mode: 'cors' })
    .then(function (r) { return r.ok ? r.json() : null; })
    .then(function (seal) {
      if (!seal || !seal.ok) { holder.setAttribute('data-keyplane-seal', 'none'); return; }
      var root = holder.attachShadow ? holder.attachShadow({ mode: 'closed' }) : holder;
      var a = document.createElement('a');
      a.href = seal.verifyUrl;
      a.target = '_blank';
      a.rel = 'noopener';
      a.setAttribute('aria-label', 'Keyplane posture scan: grade ' + seal.grade + (seal.stale ? ' (stale)' : '') + ', scanned ' + seal.scannedAt.slice(0, 10) + '. Open the verification page.');
      a.textContent = 'Keyplane scan ' + seal.grade + (seal.stale ? ' (stale)' : '') + ' \\u00b7 ' + seal.scannedAt.slice(0, 10);
      var s = a.style;
      s.display = 'inline-block'; s.font = '600 12px/1.6 system-ui, sans-serif'; s.padding = '2px 8px'; s.borderRadius = '4px';
      s.color = '#fff'; s.background = seal.stale ? '#6b6b6b' : '#1b5e20'; s.textDecoration = 'none';
      root.appendChild(a);
      holder.setAttribute('data-keyplane-seal', seal.stale ? 'stale' : 'current');
      holder.setAttribute('data-grade', seal.grade);
    })
    .catch(function () { holder.setAttribute('data-keyplane-seal', 'none'); });
})();
`;
}
