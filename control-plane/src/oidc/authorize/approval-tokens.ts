import { fail } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import type { SessionView } from '../../context.js';
import { digestOf, type AuthorizeServices } from './request.js';

/** A one-tap page's approval token lives this long (ms). */
const APPROVAL_TTL_MS = 10 * 60_000;

/** The token a one-tap or not-admitted page's form carries: bound to this session and these exact parameters. */
export async function issueApprovalToken(
  services: Pick<AuthorizeServices, 'state'>,
  session: Pick<SessionView, 'id'>,
  hidden: Record<string, string>,
): Promise<string> {
  const token = randomToken(24);
  await services.state.set(
    `oidc:approval:${token}`,
    JSON.stringify({ sessionId: session.id, digest: digestOf(hidden) }),
    APPROVAL_TTL_MS,
  );
  return token;
}

/** Takes the form's approval token (one use), refusing one of another session or for other parameters. */
export async function takeApprovalToken(
  services: Pick<AuthorizeServices, 'state'>,
  session: Pick<SessionView, 'id'> | undefined,
  token: unknown,
  params: Record<string, string>,
): Promise<void> {
  const stored =
    typeof token === 'string' && /^[A-Za-z0-9_-]{32}$/.test(token)
      ? await services.state.take(`oidc:approval:${token}`)
      : null;
  const grant = stored ? (JSON.parse(stored) as { sessionId: string; digest: string }) : null;
  if (!session || !grant || grant.sessionId !== session.id || grant.digest !== digestOf(params))
    throw fail(
      'access_denied',
      'This approval has expired or belongs to another sign-in. Go back to the app and start again.',
    );
}
