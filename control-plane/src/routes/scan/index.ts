import type { FastifyInstance } from 'fastify';
import { fail } from '../../../../lib/errors/keyplane-error.js';
import { html, page } from '../../pages/layout.js';
import { ratingReport } from '../../pages/scan-report.js';
import { latestPublicRating, publicScan } from '../../scan/public-scan.js';
import { loadSiteStatus, sealScript, siteForOrigin, siteVerification } from '../../scan/seal.js';
import { isHtmlFormPost, wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { ratingSchema } from '../orgs/schemas.js';
import type { Rating } from '../../../../lib/scan/rating.js';
import { registerScanMetrics } from '../../scan/run-scan.js';
import { startRescans } from '../../scan/rescans.js';

const urlQuery = {
  type: 'object',
  properties: { url: { type: 'string', maxLength: 2048 }, format: { enum: ['json', 'html'] } },
} as const;

function scanPage(nonce: string, url: string, rating: Rating | null, note: string | null) {
  return page({
    title: 'Website posture scan',
    nonce,
    scripts: ['/assets/forms.js'],
    body: html`<h1>Website posture scan</h1>
<p>Grades a site's HTTP security headers, cookies, redirects and scripts the way the MDN HTTP Observatory does, and signs the result.
Results are kept for a few minutes; scans are limited per address and per site.</p>
<p id="form-status" role="status" aria-live="polite"></p>
<form method="post" data-kp-post data-then="scan" action="/scan" aria-labelledby="scan-h"><h2 id="scan-h">Scan a site</h2>
<label for="scan-url">Site URL (https)</label> <input id="scan-url" name="url" type="url" required placeholder="https://www.example.com/" value="${url}">
<button type="submit" data-action="scan">Scan</button></form>
${note ? html`<p role="status">${note}</p>` : ''}
${rating ? ratingReport(rating) : ''}`,
  });
}

/** The public scan, the seal and the verification pages (docs/scan.md). No session needed. */
export default async function scanRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  registerScanMetrics(services.metrics);
  if (services.config.scan.rescanIntervalHours > 0) {
    let stop: (() => void) | null = null;
    app.addHook('onReady', async () => {
      stop = startRescans(services);
    });
    app.addHook('onClose', async () => stop?.());
  }

  app.post(
    '/scan',
    {
      schema: {
        tags: ['scan'],
        summary: 'Scan a public https site anonymously (throttled per address and per site; recent results are reused)',
        body: { type: 'object', required: ['url'], properties: { url: { type: 'string', maxLength: 2048 } } },
        response: {
          200: okObject({ rating: ratingSchema, cached: { type: 'boolean' }, receipt: receiptField }, [
            'rating',
            'cached',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { url } = request.body as { url: string };
      const result = await publicScan(services, url, request.ip);
      if (isHtmlFormPost(request)) return reply.redirect(`/scan?url=${encodeURIComponent(result.rating.url)}`, 303);
      return { ok: true, ...result };
    },
  );

  app.get(
    '/scan',
    {
      schema: {
        tags: ['scan'],
        summary: 'The latest public scan of a URL (JSON), or the scan page with its report (HTML)',
        querystring: urlQuery,
        response: { 200: okObject({ rating: ratingSchema }, ['rating']), ...errorResponses },
      },
    },
    async (request, reply) => {
      const { url } = request.query as { url?: string };
      if (wantsJson(request)) {
        if (!url) throw fail('invalid_request', 'url is required');
        const rating = await latestPublicRating(services, url);
        if (!rating) throw fail('not_found', 'this URL has not been scanned yet');
        return { ok: true, rating };
      }
      let rating: Rating | null = null;
      let note: string | null = null;
      if (url) {
        try {
          rating = await latestPublicRating(services, url);
          if (!rating) note = 'This URL has not been scanned yet.';
        } catch {
          note = 'This URL cannot be scanned: it must be an https URL with a host name.';
        }
      }
      reply.type('text/html; charset=utf-8');
      return scanPage(request.kp.cspNonce, url ?? '', rating, note);
    },
  );

  app.get(
    '/embed/seal.js',
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['scan'],
        summary: "The seal script: a small badge for the page's own origin, linking to its verification page",
      },
    },
    async (_request, reply) => {
      // Embedded by other sites: loadable cross-origin (COEP: require-corp pages too), no cookies.
      reply.header('cross-origin-resource-policy', 'cross-origin');
      reply.type('text/javascript; charset=utf-8');
      return sealScript(services.config.issuer);
    },
  );

  app.get(
    '/embed/seal.json',
    {
      config: { cache: 'public, max-age=60' },
      schema: {
        tags: ['scan'],
        summary: 'What the seal shows for an origin: only a site whose org proved control of the domain',
        querystring: {
          type: 'object',
          required: ['origin'],
          properties: { origin: { type: 'string', maxLength: 2048 } },
        },
        response: {
          200: okObject({
            siteId: { type: 'string' },
            grade: { type: 'string' },
            score: { type: 'integer' },
            scannedAt: { type: 'string' },
            stale: { type: 'boolean' },
            verifyUrl: { type: 'string' },
          }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      reply.header('access-control-allow-origin', '*');
      reply.header('cross-origin-resource-policy', 'cross-origin');
      const { origin } = request.query as { origin: string };
      let normalised: string;
      try {
        normalised = new URL(origin).origin;
      } catch {
        throw fail('invalid_request', 'origin must be an origin such as https://www.example.com');
      }
      const site = await siteForOrigin(services, normalised);
      const status = site ? await loadSiteStatus(services, site.siteId) : null;
      if (!status?.rating) throw fail('not_found', 'no verified site with a scan has this origin');
      return {
        ok: true,
        siteId: status.site.siteId,
        grade: status.rating.grade,
        score: status.rating.score,
        scannedAt: status.rating.scanned_at,
        stale: status.stale,
        verifyUrl: `${services.config.issuer}/verify/${status.site.siteId}`,
      };
    },
  );

  app.get(
    '/verify/:siteId',
    {
      schema: {
        tags: ['scan'],
        summary:
          "A site's verification page: org, URL, current grade and scan time, with the signed Rating (format=json)",
        params: { type: 'object', required: ['siteId'], properties: { siteId: { type: 'string', maxLength: 100 } } },
        querystring: { type: 'object', properties: { format: { enum: ['json', 'html'] } } },
        response: {
          200: okObject(
            {
              siteId: { type: 'string' },
              url: { type: 'string' },
              org: { type: 'object', properties: { slug: { type: 'string' }, name: { type: 'string' } } },
              verified: { type: 'boolean' },
              status: { enum: ['current', 'stale', 'unscanned', 'unverified'] },
              rating: { anyOf: [ratingSchema, { type: 'null' }] },
            },
            ['siteId', 'url', 'org', 'verified', 'status', 'rating'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { siteId } = request.params as { siteId: string };
      const found = await siteVerification(services, siteId);
      if (!found) throw fail('not_found', 'no such site');
      const { status, view } = found;
      const state = view.status;
      if (wantsJson(request)) return { ok: true, ...view };
      const referer = request.headers.referer;
      let arrivedFrom: string | null;
      try {
        arrivedFrom = referer ? new URL(referer).origin : null;
      } catch {
        arrivedFrom = null;
      }
      const siteOrigin = new URL(status.site.url).origin;
      reply.type('text/html; charset=utf-8');
      return page({
        title: `Verification · ${status.site.url}`,
        nonce: request.kp.cspNonce,
        body: html`<h1>Site verification</h1>
<p>Check that this page's address starts with <strong>${services.config.issuer}/verify/</strong>: only this page, on this address, vouches for a seal.</p>
<dl>
<dt>Organization</dt><dd data-field="org">${status.org.name}</dd>
<dt>Site</dt><dd data-field="url">${status.site.url}</dd>
<dt>Domain control</dt><dd data-field="verified">${status.verified ? 'proved' : 'not proved: no seal is shown for this site'}</dd>
<dt>Status</dt><dd data-field="status">${state}</dd>
</dl>
${arrivedFrom && arrivedFrom !== siteOrigin ? html`<p role="alert">You came here from <strong>${arrivedFrom}</strong>, but this seal belongs to <strong>${siteOrigin}</strong>.</p>` : ''}
<p class="muted">What was checked: an external scan of HTTP security headers, cookies, redirects and scripts. It says nothing about anything else.</p>
${status.rating ? ratingReport(status.rating, { stale: status.stale, advice: false }) : html`<p>No scan yet.</p>`}`,
      });
    },
  );
}
