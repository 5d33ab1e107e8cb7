import { TEST_ADVICE } from '../../../lib/scan/advice.js';
import type { Rating } from '../../../lib/scan/rating.js';
import { html, type SafeHtml } from './layout.js';

/**
 * A Rating as a readable report: each test, whether it passed, its effect on the score, what
 * to change and the header to copy. Shared by the public scan page and the verification page.
 */
export function ratingReport(rating: Rating, options: { stale?: boolean; advice?: boolean } = {}): SafeHtml {
  const advice = options.advice ?? true;
  return html`<section aria-labelledby="report-h" data-report>
<h2 id="report-h">Grade <strong data-field="grade">${rating.grade}</strong> <span class="muted">(score ${rating.score})</span></h2>
<p>Scanned <a href="${rating.url}" rel="nofollow noopener">${rating.url}</a> at <time datetime="${rating.scanned_at}">${rating.scanned_at.replace('T', ' ').slice(0, 16)} UTC</time> with ${rating.algorithm}.
${options.stale ? html`<strong data-field="stale">This result is more than 30 days old: it is not current.</strong>` : ''}</p>
<p class="muted">Scores start at 100; each test adds or removes points, and bonuses count only when the penalties leave at least 90.</p>
<table><caption>Tests</caption><thead><tr><th scope="col">Test</th><th scope="col">Result</th><th scope="col">Points</th>${advice ? html`<th scope="col">What to change</th>` : ''}</tr></thead><tbody>
${rating.tests.map((t) => {
  const a = TEST_ADVICE[t.name];
  const needsWork = !t.pass || t.score_modifier < 0;
  return html`<tr data-test="${t.name}"><th scope="row">${a?.title ?? t.name}</th>
<td>${t.pass ? 'Pass' : html`<strong>Fail</strong>`}<br><code>${t.result}</code></td>
<td>${t.score_modifier > 0 ? `+${t.score_modifier}` : String(t.score_modifier)}</td>
${advice ? html`<td>${needsWork && a ? html`${a.fix}<pre><code>${a.snippet}</code></pre>` : html`<span class="muted">Nothing to change.</span>`}</td>` : ''}</tr>`;
})}
</tbody></table>
<details><summary>Signed Rating (verify offline with the JWKS)</summary><pre><code data-field="signature">${rating.signature}</code></pre></details>
</section>`;
}
