import { TEST_ADVICE } from '#lib/scan/advice.js';
import type { Rating } from '#lib/scan/rating.js';
import { escapeHtml, html, raw, type SafeHtml } from './layout.js';
import type { PageUi } from './ui.js';

/**
 * A Rating as a readable report: each test, whether it passed, its effect on the score, what
 * to change and the header to copy. Shared by the public scan page and the verification page.
 * The chrome is in the reader's language; the tests' names and advice (lib/scan/advice.ts) are
 * technical English, marked `lang="en"`.
 */
export function ratingReport(
  rating: Rating,
  ui: PageUi,
  options: { stale?: boolean; advice?: boolean } = {},
): SafeHtml {
  const { t } = ui;
  const advice = options.advice ?? true;
  const scannedAt = Date.parse(rating.scanned_at);
  return html`<section aria-labelledby="report-h" data-report>
<h2 id="report-h">${raw(ui.rich('scan.report.grade', { grade: (c) => `<strong data-field="grade">${c}</strong>`, score: (c) => `<span class="muted">${c}</span>` }, { value: rating.grade, points: rating.score }))}</h2>
<p>${raw(
    ui.rich(
      'scan.report.scanned',
      {
        site: (c) => `<a href="${escapeHtml(rating.url)}" rel="nofollow noopener">${c}</a>`,
        when: (c) => `<time datetime="${escapeHtml(rating.scanned_at)}">${c}</time>`,
      },
      {
        url: rating.url,
        // English keeps the unambiguous ISO form, as the account page.
        at:
          ui.locale === 'en' || Number.isNaN(scannedAt)
            ? `${rating.scanned_at.replace('T', ' ').slice(0, 16)} UTC`
            : `${ui.dateTime(scannedAt)} UTC`,
        algorithm: rating.algorithm,
      },
    ),
  )}
${options.stale ? html`<strong data-field="stale">${t('scan.report.stale')}</strong>` : ''}</p>
<p class="muted">${t('scan.report.scoring')}</p>
<table><caption>${t('scan.report.tests')}</caption><thead><tr><th scope="col">${t('scan.report.test')}</th><th scope="col">${t('scan.report.result')}</th><th scope="col">${t('scan.report.points')}</th>${advice ? html`<th scope="col">${t('scan.report.fix')}</th>` : ''}</tr></thead><tbody>
${rating.tests.map((test) => {
  const a = TEST_ADVICE[test.name];
  const needsWork = !test.pass || test.score_modifier < 0;
  return html`<tr data-test="${test.name}"><th scope="row" lang="en">${a?.title ?? test.name}</th>
<td>${test.pass ? t('scan.report.pass') : html`<strong>${t('scan.report.fail')}</strong>`}<br><code>${test.result}</code></td>
<td>${test.score_modifier > 0 ? `+${test.score_modifier}` : String(test.score_modifier)}</td>
${advice ? html`<td>${needsWork && a ? html`<span lang="en">${a.fix}</span><pre><code>${a.snippet}</code></pre>` : html`<span class="muted">${t('scan.report.nothing')}</span>`}</td>` : ''}</tr>`;
})}
</tbody></table>
<details><summary>${t('scan.report.signed')}</summary><pre><code data-field="signature">${rating.signature}</code></pre></details>
</section>`;
}
