import type { FastifyReply, FastifyRequest } from 'fastify';
import { setSessionCookies } from '../../http/session-cookies.js';
import type { CallbackOutcome } from '../../federation/federated-sign-in.js';
import type { ControlPlaneServices } from '../../context.js';
import { linkPage, replaceQuestionPage, testedPage } from './pages.js';

/**
 * The answer to the end of an upstream round trip, an OIDC callback or a SAML `continue` alike:
 * the claims of a test, the question before replacing another account's session, the link to
 * confirm, or the new session's cookies and the way on.
 */
export function answerSignIn(
  services: ControlPlaneServices,
  request: FastifyRequest,
  reply: FastifyReply,
  outcome: CallbackOutcome,
): string | FastifyReply {
  if (outcome.kind === 'session') {
    setSessionCookies(services, reply, outcome.sessionToken);
    return reply.redirect(outcome.returnTo, 303);
  }
  reply.type('text/html; charset=utf-8');
  if (outcome.kind === 'tested') return testedPage(request, outcome.claims);
  if (outcome.kind === 'confirm') return replaceQuestionPage(request, outcome.question);
  return linkPage(request, outcome.link);
}
