import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { authorizationErrorParams, type OAuthErrorCode } from '#lib/oauth/errors.js';
import { decideAuthorization, mergeApproval, type RawParams } from '#lib/oauth/authorization-request.js';
import { approvalOf } from '../../consent/gate.js';
import { takeApprovalToken } from './approval-tokens.js';
import { checkIdTokenHint } from './check-id-token-hint.js';
import { checkRequest } from './check-request.js';
import { NOT_ADMITTED } from '#lib/access/evaluate-access.js';
import { checkAccountAdmitted } from './check-sign-in-access.js';
import { askForApproval, offerAccountChoice, sendToSignIn, sendToStepUp } from './interact.js';
import { answerWithCode } from './issue-code.js';
import { loadClient } from './load-client.js';
import { resumeRequest } from './pending-requests.js';
import { refuseToClient } from './refuse-to-client.js';
import {
  carried,
  type AuthorizeBrowser,
  type AuthorizeOutcome,
  type AuthorizeServices,
  type RefusalTarget,
} from './request.js';
import { resolveRequest } from './resolve-request.js';

/**
 * The one place where an authorization request's refusals are answered. Before the redirect URI is
 * verified every failure is thrown on, and the error handler shows it on a page; afterwards a
 * refusal meant for the client (`toClient`) goes to that URI with RFC 9207 `iss`, and PostgreSQL or
 * Redis going away is `temporarily_unavailable` there (RFC 6749 §4.1.2.1: a 503 cannot travel
 * through a redirect). Anything else (an approval that expired) stays a page.
 */
async function answeringRefusals(
  services: AuthorizeServices,
  steps: (refusal: RefusalTarget) => Promise<AuthorizeOutcome>,
): Promise<AuthorizeOutcome> {
  const refusal: RefusalTarget = { target: null };
  try {
    return await steps(refusal);
  } catch (error) {
    const { target } = refusal;
    if (target === null) throw error;
    const failure = isDependencyUnavailable(error)
      ? refuseToClient('temporarily_unavailable', 'the sign-in is unavailable for a moment; try again')
      : error;
    if (!isKeyplaneError(failure) || !failure.toClient) throw error;
    const code = failure.fields.error as OAuthErrorCode;
    return {
      kind: 'respond',
      target,
      refused: code,
      params: authorizationErrorParams({
        error: code,
        description: failure.message,
        ...(target.state !== undefined ? { state: target.state } : {}),
        iss: services.config.issuer,
      }),
    };
  }
}

/**
 * `GET|POST /auth/authorize` (RFC 6749 §4.1, OIDC Core §3.1.2): a new request (plain parameters,
 * pushed, or a signed request object) or one resumed after sign-in, step-up or the account choice;
 * checked against its client, then decided: a code, a page, or a refusal for the client.
 */
export async function authorize(
  services: AuthorizeServices,
  browser: AuthorizeBrowser,
  incoming: RawParams,
): Promise<AuthorizeOutcome> {
  return answeringRefusals(services, async (refusal) => {
    let params: RawParams;
    let loginAfter: number | undefined;
    let accountChosen = false;
    if (typeof incoming.resume === 'string') {
      const pending = await resumeRequest(services, incoming.resume);
      params = pending.params;
      loginAfter = pending.loginAfter;
      accountChosen = pending.accountChosen === true;
    } else {
      // The plain parameters' ui_locales serves the pages shown before the request is resolved;
      // the resolved request's (a pushed request's, a request object's) wins below.
      browser.adoptUiLocales(incoming.ui_locales);
      params = await resolveRequest(services, await loadClient(services, incoming), incoming, refusal);
      // After a resume the cookie carries it, and the switcher's choice since then stays.
      if (params.ui_locales !== incoming.ui_locales) browser.adoptUiLocales(params.ui_locales);
    }
    const checked = await checkRequest(services, params, refusal);
    const { client, authz } = checked;
    const hintSubject = await checkIdTokenHint(services, checked);
    const { session } = browser;
    const now = services.now();
    const approval = session ? await approvalOf(services, session.identityId, client.clientId) : null;
    const decision = decideAuthorization({
      request:
        checked.mcpResource && !authz.prompt.includes('none')
          ? { ...authz, prompt: [...authz.prompt, 'consent'] }
          : authz,
      now,
      approval: checked.mcpResource ? null : approval,
      firstParty: client.metadata.first_party === true && !checked.mcpResource,
      session: session
        ? { identityId: session.identityId, assurance: session.assurance, authTime: session.authTime }
        : undefined,
      ...(loginAfter !== undefined ? { loginAfter } : {}),
      ...(hintSubject !== undefined ? { hintSubject } : {}),
      accountChosen,
    });
    // Access before consent: a person the client's rules leave out hears access_denied, never
    // consent_required (prompt=none), and never sees an approval page.
    const wouldAsk = decision.action === 'refuse' && decision.error === 'consent_required';
    if ((decision.action === 'issue' || decision.action === 'consent' || wouldAsk) && session) {
      const beforeConsent = decision.action === 'consent' || wouldAsk;
      const notAdmitted = await checkAccountAdmitted(services, checked, params, session, beforeConsent);
      if (notAdmitted) return notAdmitted;
    }
    switch (decision.action) {
      case 'refuse':
        throw refuseToClient(decision.error, decision.description);
      case 'issue':
        return answerWithCode(services, session!, checked, decision.approval);
      case 'login':
        return sendToSignIn(services, params, loginAfter ?? now);
      case 'select_account':
        return offerAccountChoice(services, checked, params, session!, loginAfter, now);
      case 'step_up':
        return sendToStepUp(services, params, loginAfter ?? now);
      case 'consent':
        return askForApproval(services, checked, params, session!);
    }
  });
}

/** The one-tap (or not-admitted) form came back: its approval token is one use, this session's, for these exact parameters. */
export async function approveAuthorization(
  services: AuthorizeServices,
  browser: AuthorizeBrowser,
  body: RawParams,
): Promise<AuthorizeOutcome> {
  return answeringRefusals(services, async (refusal) => {
    const params = carried(body);
    const checked = await checkRequest(services, params, refusal);
    const { session } = browser;
    await takeApprovalToken(services, session, body.approval, params);
    if (body.decision === 'deny') throw refuseToClient('access_denied', 'the user declined');
    if (body.decision === 'not_admitted') throw refuseToClient('access_denied', NOT_ADMITTED);
    // An approval token from the not-admitted page must not become a code: the rules are checked again.
    const notAdmitted = await checkAccountAdmitted(services, checked, params, session!, true);
    if (notAdmitted) return notAdmitted;
    // The session may have changed since the page was shown: decide again, but the approval now counts.
    const decision = decideAuthorization({
      request: { ...checked.authz, prompt: [] },
      session: { identityId: session!.identityId, assurance: session!.assurance, authTime: session!.authTime },
      now: services.now(),
      approval: mergeApproval(null, checked.authz),
    });
    if (decision.action !== 'issue')
      throw fail('access_denied', 'The sign-in changed while this page was open. Go back to the app and start again.');
    return answerWithCode(services, session!, checked, 'new');
  });
}
