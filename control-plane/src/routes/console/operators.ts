import type { FastifyInstance } from 'fastify';
import { html } from '../../pages/layout.js';
import { age } from '../../pages/console-views.js';
import { listOperators } from '../../console/operators.js';
import { type ConsoleKit, ROLE_KEYS } from './kit.js';

/** Who holds a console role. */
export function operatorsSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, render, get } = c;
  get('/console/operators', 'Operators and auditors', async (request, reply) => {
    const u = ui(request);
    const list = await listOperators(kp);
    const body = html`<table><thead><tr><th scope="col">${u.t('console.col.username')}</th><th scope="col">${u.t('console.account.role')}</th><th scope="col">${u.t('console.col.created')}</th></tr></thead>
<tbody>${list.map((o) => html`<tr><td><a href="/console/accounts/${o.identityId}">${o.username}</a></td><td>${u.t(ROLE_KEYS[o.role])}</td><td>${age(u, o.grantedAt, kp.now())}</td></tr>`)}</tbody></table>
<p>${u.t('console.operators.how')}</p>`;
    return render(request, reply, u.t('console.nav.operators'), body);
  });
}
