import type { FastifyInstance } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { sameOriginReferrerArea } from '../../plugins/security-headers.js';
import { consoleSessionOf } from '../../http/operator-access.js';
import { consoleKit } from './kit.js';
import { sessionSection } from './session.js';
import { overviewSection } from './overview.js';
import { accountsSection } from './accounts.js';
import { clientsSection } from './clients.js';
import { orgsSection } from './orgs.js';
import { agentsSection } from './agents.js';
import { webhooksSection } from './webhooks.js';
import { streamsSection } from './streams.js';
import { apisSection } from './apis.js';
import { operatorsSection } from './operators.js';
import { receiptsSection } from './receipts.js';

/**
 * `/console` (docs/console.md): the operators' and auditors' pages, behind a console session of
 * their own. Every change goes through the operation the admin API uses, needs the operator role
 * and a fresh step-up; a form sent without one is kept and comes back filled in after it. One
 * module per section; each gets the shared kit (kit.ts).
 */
const OPEN_PATHS = new Set(['/console/sign-in', '/console/session/options', '/console/session/verify']);

const SECTIONS = [
  sessionSection,
  overviewSection,
  accountsSection,
  clientsSection,
  orgsSection,
  agentsSection,
  webhooksSection,
  streamsSection,
  apisSection,
  operatorsSection,
  receiptsSection,
];

export default async function consoleRoutes(app: FastifyInstance): Promise<void> {
  const kp = app.kp;
  // The console's forms post back to it with its cookie and the everyday session.
  sameOriginReferrerArea(app);

  app.addHook('onRequest', async (request, reply) => {
    if (OPEN_PATHS.has(request.url.split('?')[0]!)) return;
    if (await consoleSessionOf(kp, request)) return;
    if (request.method === 'GET') return reply.redirect('/console/sign-in', 303);
    throw fail('console_session_required', 'open a console session at /console first');
  });

  const kit = consoleKit(app);
  for (const section of SECTIONS) section(app, kit);
}
