export { createClient } from './client.js';
export type {
  AssuranceRequirement,
  AuthorizationParams,
  ClientOptions,
  KeyplaneClient,
  PendingAuthorization,
  TokenSet,
  VerifyIdTokenOptions,
} from './client.js';
export { ASSURANCE_LEVELS, assuranceOf, isAssuranceLevel, meetsAssurance, type AssuranceLevel } from './assurance.js';
export { DpopSigner, dpopThumbprint, generateDpopKey, type DpopKey } from './dpop.js';
export { KeyplaneSdkError, isKeyplaneSdkError, type SdkErrorCode } from './errors.js';
export { accountKey, linkableEmail, type AccountKey } from './linking.js';
export { WebSessions, safeReturnPath, type Session, type WebOptions } from './web.js';
export { keyplaneFastify, type KeyplaneFastify } from './fastify.js';
export { keyplaneExpress, type KeyplaneExpress, type KeyplaneRequest, type Middleware } from './express.js';
