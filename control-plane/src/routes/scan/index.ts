import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { html, page, raw } from '../../pages/layout.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import { ratingReport } from '../../pages/scan-report.js';
import { latestPublicRating, publicScan } from '../../scan/public-scan.js';
import { loadSiteStatus, sealScript, siteForOrigin, siteVerification } from '../../scan/seal.js';
import { isHtmlFormPost, wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { ratingSchema } from '../orgs/schemas.js';
import type { Rating } from '#lib/scan/rating.js';
import { registerScanMetrics } from '../../scan/run-scan.js';
import { startRescans } from '../../scan/rescans.js';

const urlQuery = {
  type: 'object',
  properties: { url: { type: 'string', maxLength: 2048 }, format: { enum: ['json', 'html'] } },
} as const;

/** A note the public scan page shows above the form's result. */
type ScanNote = 'scan.note.not_scanned' | 'scan.note.invalid_url';

function scanPage(nonce: string, ui: PageUi, url: string, rating: Rating | null, note: ScanNote | null) {
  const { t } = ui;
  return page({
    title: t('scan.title'),
    nonce,
    ui,
    scripts: ['/assets/forms.js'],
    body: html`<h1>${t('scan.heading')}</h1>
<p>${t('scan.intro')}</p>
<p id="form-status" role="status" aria-live="polite"></p>
<form method="post" data-kp-post data-then="scan" action="/scan" aria-labelledby="scan-h"><h2 id="scan-h">${t('scan.form_heading')}</h2>
<label for="scan-url">${t('scan.url')}</label> <input id="scan-url" name="url" type="url" required placeholder="https://www.example.com/" value="${url}">
<button type="submit" data-action="scan">${t('scan.button')}</button></form>
${note ? html`<p role="status">${t(note)}</p>` : ''}
${rating ? ratingReport(rating, ui) : ''}`,
  });
}

/**
 * The scan form shown again with the person's URL and a note, when the URL was refused (the
 * error handler answers with it, status and all: docs/errors.md#one-error-path); any other
 * refusal gets the shared page.
 */
function scanFormAgain(request: FastifyRequest, failure: KeyplaneError): string | undefined {
  if (failure.reason !== 'scan_target_refused') return undefined;
  const input = { ...(request.query as { url?: unknown }), ...(request.body as { url?: unknown } | undefined) };
  const url = typeof input.url === 'string' ? input.url : '';
  return scanPage(request.kp.cspNonce, uiOf(request), url, null, 'scan.note.invalid_url');
}

/** The seal's states (docs/scan.md), as the verification page names them. */
const STATUS_LABELS: Record<string, MessageKey | undefined> = {
  current: 'scan.verify.status.current',
  stale: 'scan.verify.status.stale',
  unscanned: 'scan.verify.status.unscanned',
  unverified: 'scan.verify.status.unverified',
};

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
      config: { errorPage: scanFormAgain },
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
      config: { errorPage: scanFormAgain },
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
      // A refused URL is thrown on: the error handler shows the form again with its note (scanFormAgain).
      const rating = url ? await latestPublicRating(services, url) : null;
      const note: ScanNote | null = url && !rating ? 'scan.note.not_scanned' : null;
      reply.type('text/html; charset=utf-8');
      return scanPage(request.kp.cspNonce, uiOf(request), url ?? '', rating, note);
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
      const ui = uiOf(request);
      const { t } = ui;
      const strong = (c: string) => `<strong>${c}</strong>`;
      const stateKey = STATUS_LABELS[state];
      reply.type('text/html; charset=utf-8');
      return page({
        title: t('scan.verify.title', { url: status.site.url }),
        nonce: request.kp.cspNonce,
        ui,
        body: html`<h1>${t('scan.verify.heading')}</h1>
<p>${raw(ui.rich('scan.verify.address', { strong }, { prefix: `${services.config.issuer}/verify/` }))}</p>
<dl>
<dt>${t('scan.verify.org')}</dt><dd data-field="org">${status.org.name}</dd>
<dt>${t('scan.verify.site')}</dt><dd data-field="url">${status.site.url}</dd>
<dt>${t('scan.verify.domain')}</dt><dd data-field="verified" data-value="${status.verified ? 'proved' : 'not-proved'}">${status.verified ? t('scan.verify.proved') : t('scan.verify.not_proved')}</dd>
<dt>${t('scan.verify.status')}</dt><dd data-field="status" data-value="${state}">${stateKey ? t(stateKey) : state}</dd>
</dl>
${arrivedFrom && arrivedFrom !== siteOrigin ? html`<p role="alert">${raw(ui.rich('scan.verify.elsewhere', { from: strong, owner: strong }, { arrived: arrivedFrom, origin: siteOrigin }))}</p>` : ''}
<p class="muted">${t('scan.verify.scope')}</p>
${status.rating ? ratingReport(status.rating, ui, { stale: status.stale, advice: false }) : html`<p>${t('scan.verify.no_scan')}</p>`}`,
      });
    },
  );
}
