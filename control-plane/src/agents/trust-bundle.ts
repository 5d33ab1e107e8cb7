import { signJwt } from '#lib/crypto/jwt.js';
import type { ControlPlaneServices } from '../context.js';

/**
 * The claim registry as a signed trust bundle (`typ` agent-trust-bundle+jwt, a day long): what a
 * federation peer needs to read our proofs, that is the claims, their evidence and lifetimes,
 * and the token types.
 */
export async function signTrustBundle(
  services: Pick<ControlPlaneServices, 'config' | 'keys' | 'now'>,
): Promise<string> {
  const now = Math.floor(services.now() / 1000);
  const key = services.keys.current();
  return signJwt(
    { kid: key.kid, typ: 'agent-trust-bundle+jwt' },
    {
      claims: {
        key_control: { evidence: 'DPoP proof by the agent key (enrollment, rotation, verify, run)' },
        owner_accountability: { evidence: 'owner approval with a passkey session' },
        channel_control: { evidence: 'domain-control', lifetime_days: 30 },
        descriptor_integrity: { evidence: 'descriptor-integrity', lifetime_days: 7 },
      },
      token_types: ['agent-proof+jwt', 'agent-run+jwt', 'vc+jwt'],
      run_proof_formats: ['svc-agent-run-proof-v1'],
      jwks_uri: `${services.config.issuer}/.well-known/jwks.json`,
      iss: services.config.issuer,
      iat: now,
      exp: now + 86_400,
    },
    key.keyObject ?? key.privateKey,
    'ES256',
  );
}
