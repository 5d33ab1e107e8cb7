import type { SessionView } from '../../context.js';
import { issueAuthorizationCode, type ApprovalKind } from '../issue-code.js';
import type { AuthorizeOutcome, AuthorizeServices, CheckedRequest } from './request.js';

/** The code for the client at its redirect URI (RFC 6749 §4.1.2, RFC 9207 `iss`). */
export async function answerWithCode(
  services: AuthorizeServices,
  session: SessionView,
  { client, authz, target }: CheckedRequest,
  approval: ApprovalKind,
): Promise<AuthorizeOutcome> {
  const code = await issueAuthorizationCode(services, session, client, authz, approval);
  return {
    kind: 'respond',
    target,
    params: { code, ...(authz.state !== undefined ? { state: authz.state } : {}), iss: services.config.issuer },
  };
}
