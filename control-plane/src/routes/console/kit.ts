import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../../events/types.js';
import { errorResponses } from '../../http/schemas.js';
import { html, type SafeHtml } from '../../pages/layout.js';
import { refusalText } from '../../pages/link-pages.js';
import { uiOf } from '../../pages/ui.js';
import type { ErrorPage } from '../../plugins/errors.js';
import { consolePage } from '../../pages/console-views.js';
import type { ConsoleSessionView } from '../../console/console-session.js';
import { checkOperatorRole, isSensitive } from '../../http/operator-access.js';
import { formFields, keepFormForStepUp } from '../../console/resume.js';

/** What every console section's routes share: the session, the page frame, the change rule, the route shapes. */
export const html200 = 'text/html; charset=utf-8';

export const ROLE_KEYS = { operator: 'console.role.operator', auditor: 'console.role.auditor' } as const;

type Change = (actor: Actor, fields: Record<string, string>) => Promise<unknown>;
type Handler = (request: FastifyRequest, reply: FastifyReply) => unknown;

export type ConsoleKit = ReturnType<typeof consoleKit>;

export function consoleKit(app: FastifyInstance) {
  const kp = app.kp;
  const opened = (request: FastifyRequest): ConsoleSessionView => request.kp.console!;
  const operator = (request: FastifyRequest) => opened(request).role === 'operator';
  const ui = (request: FastifyRequest) => uiOf(request);
  const render = (request: FastifyRequest, reply: FastifyReply, title: string, body: SafeHtml, status = 200) => {
    reply.code(status).type(html200);
    return consolePage(ui(request), { title, nonce: request.kp.cspNonce, session: opened(request), body });
  };

  /** A refused change: the console page saying why (role="alert"). */
  const errorPage: ErrorPage = (request, failure, reply) =>
    request.kp.console
      ? render(
          request,
          reply,
          ui(request).t('console.refused'),
          html`<p class="error" role="alert" data-reason="${failure.reason}">${refusalText(ui(request), failure)}</p>
<p><a href="/console">${ui(request).t('console.nav.overview')}</a></p>`,
          failure.status,
        )
      : undefined;

  /**
   * A change from a console form: an auditor is refused (403); without a fresh step-up the form
   * is kept and the person sent to step up, coming back to `formPage` with the form filled in.
   */
  async function change(request: FastifyRequest, reply: FastifyReply, formPage: string, work: Change) {
    const session = opened(request);
    checkOperatorRole(session);
    const fields = formFields(request.body);
    if (!isSensitive(session, request)) {
      const resume = await keepFormForStepUp(kp, session, fields);
      const back = `${formPage}${formPage.includes('?') ? '&' : '?'}resume=${resume}`;
      return reply.redirect(`/auth/step-up?return=${encodeURIComponent(back)}`, 303);
    }
    return work({ type: 'person', id: session.identityId }, fields);
  }

  const post = (path: string, summary: string, handler: Handler) =>
    app.post(
      path,
      {
        config: { errorPage },
        schema: {
          tags: ['console'],
          summary,
          security: [{ consoleCookie: [] }],
          body: { type: 'object', additionalProperties: true },
          response: { ...errorResponses },
        },
      },
      handler,
    );
  const get = (path: string, summary: string, handler: Handler) =>
    app.get(
      path,
      {
        schema: {
          tags: ['console'],
          summary,
          security: [{ consoleCookie: [] }],
          produces: ['text/html'],
          response: { ...errorResponses },
        },
      },
      handler,
    );

  return { kp, opened, operator, ui, render, change, get, post };
}
