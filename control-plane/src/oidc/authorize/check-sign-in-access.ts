import { accessRuleParts, NO_ROUTE_ADMITS, NOT_ADMITTED } from '#lib/access/evaluate-access.js';
import type { RawParams } from '#lib/oauth/authorization-request.js';
import { usernameOf } from '../../accounts/profile.js';
import { checkGatewayAdmission, checkSignInAccess } from '../../clients/sign-in-access.js';
import { sessionRouteRules } from '#lib/gateway-protocol/policy.js';
import type { SessionView } from '../../context.js';
import { issueApprovalToken } from './approval-tokens.js';
import { refuseToClient } from './refuse-to-client.js';
import {
  carried,
  formTargetOf,
  type AuthorizeOutcome,
  type AuthorizeServices,
  type CheckedRequest,
} from './request.js';

/**
 * The client's `access.orgs` (docs/orgs.md#who-may-sign-in-to-an-app): an account they do not
 * admit is told why on a page whose form answers the client `access_denied` (with `prompt=none`
 * there is no page: the answer goes at once). Before a consent page (`beforeConsent`), a gateway
 * client's route rules too (docs/gateway.md#access-rules): nobody approves an app that none of
 * its routes would let them into; the gateway hears `access_denied` at once and shows its own 403
 * page, which it then keeps showing rather than sending the browser back here. Null when the
 * account is admitted.
 */
export async function checkAccountAdmitted(
  services: AuthorizeServices,
  { client, authz }: CheckedRequest,
  params: RawParams,
  session: SessionView,
  beforeConsent: boolean,
): Promise<AuthorizeOutcome | null> {
  const orgs = client.metadata.access.orgs;
  const transport = authz.responseMode === 'web_message' ? 'popup' : 'redirect';
  const access = await checkSignInAccess(services, { id: client.clientId, orgs }, session.identityId, transport);
  if (access.allowed) {
    const routeRules = beforeConsent && client.metadata.gateway ? sessionRouteRules(client.metadata.gateway) : null;
    if (!routeRules) return null;
    const admission = await checkGatewayAdmission(services, client.clientId, routeRules, session.identityId);
    if (admission.allowed) return null;
    throw refuseToClient('access_denied', NO_ROUTE_ADMITS);
  }
  if (authz.prompt.includes('none')) throw refuseToClient('access_denied', NOT_ADMITTED);
  const hidden = carried(params);
  const approval = await issueApprovalToken(services, session, hidden);
  const origin = new URL(authz.redirectUri).origin;
  return {
    kind: 'not_admitted',
    view: {
      clientName: client.metadata.client_name ?? origin,
      clientOrigin: origin,
      username: (await usernameOf(services, session.identityId)) ?? session.identityId,
      admits: accessRuleParts({ orgs }),
      hidden: { ...hidden, approval },
      formAction: [formTargetOf(authz.redirectUri)],
    },
  };
}
