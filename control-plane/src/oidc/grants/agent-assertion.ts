import { decodeJwt } from 'jose';
import { checkJwt, importPublicJwk } from '#lib/crypto/jwt.js';
import { oauthError } from '#lib/oauth/errors.js';
import type { OAuthErrorCode } from '#lib/oauth/errors.js';
import type { ControlPlaneServices } from '../../context.js';
import type { StoredAgent } from '../../storage/interface.js';

/** RFC 7523 §3 leaves the assertion lifetime to the server; ours is at most 5 minutes. */
const MAX_ASSERTION_SECONDS = 300;

type Services = Pick<ControlPlaneServices, 'config' | 'storage' | 'state' | 'now'>;

/**
 * Verifies a JWT an agent signed with its enrolled key to speak at the token endpoint (the
 * jwt-bearer grant's assertion, a token exchange's actor token): an active agent as `iss` and
 * `sub`, `aud` the token endpoint, `exp` within 5 minutes, and a `jti` taken once. Every failure
 * is `refusal` (the grant's `invalid_grant`, the exchange's `invalid_request`, RFC 8693 §2.2.2).
 */
export async function verifyAgentAssertion(
  services: Services,
  assertion: string,
  refusal: Extract<OAuthErrorCode, 'invalid_grant' | 'invalid_request'>,
  /** Checks run before the `jti` is taken (a wrong DPoP key must not burn the assertion). */
  before: (agent: StoredAgent) => void = () => {},
): Promise<StoredAgent> {
  let claimed: string | undefined;
  try {
    claimed = decodeJwt(assertion).iss;
  } catch {
    throw oauthError(refusal, 'the assertion is not a JWT');
  }
  const agent =
    typeof claimed === 'string' && claimed.startsWith('agt_') ? await services.storage.agents.get(claimed) : null;
  if (!agent || agent.state !== 'active') throw oauthError(refusal, 'no active agent issued this assertion');
  const now = services.now();
  let payload;
  try {
    ({ payload } = await checkJwt(assertion, importPublicJwk(agent.publicJwk as Record<string, unknown>), {
      issuer: agent.agentId,
      subject: agent.agentId,
      audience: `${services.config.issuer}/auth/token`,
      algorithms: [agent.alg],
      now,
      requiredClaims: ['exp', 'jti'],
    }));
  } catch {
    throw oauthError(
      refusal,
      'the assertion is not signed by the agent key or its claims are wrong (iss, sub, aud, exp)',
    );
  }
  if ((payload.exp as number) - now / 1000 > MAX_ASSERTION_SECONDS)
    throw oauthError(refusal, 'the assertion must expire within 5 minutes');
  before(agent);
  const jti = String(payload.jti).slice(0, 256);
  const fresh = await services.state.setIfAbsent(
    `agents:assertion:${agent.agentId}:${jti}`,
    '1',
    (MAX_ASSERTION_SECONDS + 60) * 1000,
  );
  if (!fresh) throw oauthError(refusal, 'the assertion was used already');
  return agent;
}
