import type { VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { DEVICE_CODE_GRANT } from '#lib/oauth/device-code.js';
import { JWT_BEARER_GRANT, type GrantType } from '#lib/oauth/grant-types.js';
import { formatScope } from '#lib/oauth/scope.js';
import { ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT } from '#lib/oauth/token-exchange.js';
import type { ControlPlaneServices } from '../../context.js';
import type { StoredClient } from '../../storage/interface.js';
import { authorizationCodeGrant } from './authorization-code.js';
import { clientCredentialsGrant } from './client-credentials.js';
import { deviceCodeGrant } from './device-code.js';
import { jwtBearerGrant } from './jwt-bearer.js';
import { refreshTokenGrant } from './refresh-token.js';
import type { GrantResult } from './grant-records.js';
import { tokenExchangeGrant } from './token-exchange.js';

/** What every grant may run on (each takes a Pick of it). */
export type TokenGrantServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'keys' | 'now' | 'secrets'
>;

/** The token endpoint's successful answer (RFC 6749 §5.1, RFC 8693 §2.2.1). */
export interface TokenAnswer {
  access_token: string;
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  id_token?: string;
  refresh_token?: string;
  issued_token_type?: string;
  receipt?: string;
}

/** One grant at the token endpoint: the request's client (admitted), its body and its checked DPoP proof. */
export type TokenGrant = (
  services: TokenGrantServices,
  client: StoredClient,
  body: Record<string, unknown>,
  proof: VerifiedDpopProof | null,
) => Promise<TokenAnswer>;

/** The answer of a grant that minted tokens for a grant record. */
function answerOf(result: GrantResult, extra: { issued_token_type?: string } = {}): TokenAnswer {
  return {
    access_token: result.minted.accessToken,
    token_type: result.proof ? 'DPoP' : 'Bearer',
    expires_in: result.minted.expiresIn,
    scope: formatScope(result.scopes),
    ...(result.minted.idToken ? { id_token: result.minted.idToken } : {}),
    ...(result.refreshToken ? { refresh_token: result.refreshToken } : {}),
    ...extra,
    ...(result.receipt ? { receipt: result.receipt } : {}),
  };
}

/**
 * The token endpoint's dispatch: one line per grant type declared in lib/oauth/grant-types.ts (the
 * mapped type makes a declared grant without its line a compile error, and a line without its
 * declaration too).
 */
export const TOKEN_GRANTS: { readonly [Type in GrantType]: TokenGrant } = {
  authorization_code: async (...args) => answerOf(await authorizationCodeGrant(...args)),
  refresh_token: async (...args) => answerOf(await refreshTokenGrant(...args)),
  [JWT_BEARER_GRANT]: async (...args) => {
    const issued = await jwtBearerGrant(...args);
    // Agent tokens are always DPoP-bound (the grant refuses a request without a proof).
    return {
      access_token: issued.accessToken,
      token_type: 'DPoP',
      expires_in: issued.expiresIn,
      scope: issued.scope,
      ...(issued.receipt ? { receipt: issued.receipt } : {}),
    };
  },
  [DEVICE_CODE_GRANT]: async (...args) => answerOf(await deviceCodeGrant(...args)),
  // RFC 8693 §2.2.1: an exchange says what it issued.
  [TOKEN_EXCHANGE_GRANT]: async (...args) =>
    answerOf(await tokenExchangeGrant(...args), { issued_token_type: ACCESS_TOKEN_TYPE }),
  client_credentials: async (...args) => answerOf(await clientCredentialsGrant(...args)),
};
