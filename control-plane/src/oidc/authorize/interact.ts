import type { RawParams } from '#lib/oauth/authorization-request.js';
import { usernameOf } from '../../accounts/profile.js';
import { consentApiScopes } from '../../apis/apis.js';
import { documentHostOf } from '../../clients/client-id-documents.js';
import type { SessionView } from '../../context.js';
import { issueApprovalToken } from './approval-tokens.js';
import { parkRequest } from './pending-requests.js';
import {
  carried,
  formTargetOf,
  type AuthorizeOutcome,
  type AuthorizeServices,
  type CheckedRequest,
} from './request.js';
import { clientLinksOf } from './views.js';

const resumeHref = (id: string) => `/auth/authorize?resume=${id}`;
/** The sign-in page, offering the connection the request named (`connection`, as Auth0's and WorkOS's) when it did. */
const signInHref = (id: string, connection?: string) =>
  `/auth?return=${encodeURIComponent(resumeHref(id))}${connection !== undefined && /^con_[A-Za-z0-9_-]{1,64}$/.test(connection) ? `&connection=${connection}` : ''}`;

/** Sign in first (or again, for prompt=login and max_age): the sign-in page resumes the parked request. */
export async function sendToSignIn(
  services: AuthorizeServices,
  params: RawParams,
  loginAfter: number,
): Promise<AuthorizeOutcome> {
  const id = await parkRequest(services, { params: carried(params), loginAfter });
  const connection = typeof params.connection === 'string' ? params.connection : undefined;
  return { kind: 'redirect', location: signInHref(id, connection) };
}

/** Step up to the requested assurance; it may also stand for the fresh sign-in that prompt=login or max_age asked for. */
export async function sendToStepUp(
  services: AuthorizeServices,
  params: RawParams,
  loginAfter: number,
): Promise<AuthorizeOutcome> {
  const id = await parkRequest(services, { params: carried(params), loginAfter });
  return { kind: 'redirect', location: `/auth/step-up?return=${encodeURIComponent(resumeHref(id))}` };
}

/**
 * prompt=select_account: one session per browser, so continue with this account or sign in to
 * another (which replaces this session). Two parked copies of the request, one for each answer.
 */
export async function offerAccountChoice(
  services: AuthorizeServices,
  { client, authz }: CheckedRequest,
  params: RawParams,
  session: SessionView,
  loginAfter: number | undefined,
  now: number,
): Promise<AuthorizeOutcome> {
  const hidden = carried(params);
  const stay = await parkRequest(services, {
    params: hidden,
    ...(loginAfter !== undefined ? { loginAfter } : {}),
    accountChosen: true,
  });
  const other = await parkRequest(services, { params: hidden, loginAfter: loginAfter ?? now });
  const username = await usernameOf(services, session.identityId);
  return {
    kind: 'account_choice',
    view: {
      clientName: client.metadata.client_name ?? new URL(authz.redirectUri).origin,
      username: username ?? session.identityId,
      continueHref: resumeHref(stay),
      anotherHref: signInHref(other),
    },
  };
}

/** The one-tap page: the approval form carries the request and a token bound to this session and these parameters. */
export async function askForApproval(
  services: AuthorizeServices,
  { client, authz }: CheckedRequest,
  params: RawParams,
  session: SessionView,
): Promise<AuthorizeOutcome> {
  const hidden = carried(params);
  const approval = await issueApprovalToken(services, session, hidden);
  const username = await usernameOf(services, session.identityId);
  const origin = new URL(authz.redirectUri).origin;
  const documentHost = documentHostOf(client);
  return {
    kind: 'one_tap',
    view: {
      clientName: client.metadata.client_name ?? documentHost ?? origin,
      clientOrigin: formTargetOf(authz.redirectUri),
      ...(documentHost !== null ? { unverifiedHost: documentHost } : {}),
      ...clientLinksOf(client.metadata),
      username: username ?? session.identityId,
      scopes: authz.scopes,
      ...(await consentApiScopes(services, client, authz.resource)),
      resources: authz.resource !== undefined ? [authz.resource] : [],
      hidden: { ...hidden, approval },
      formAction: [formTargetOf(authz.redirectUri)],
    },
  };
}
