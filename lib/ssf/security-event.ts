import { signJwt } from '../crypto/jwt.js';
import type { TokenSigningKey } from '../tokens/sign-token.js';

/** RFC 8935 push and RFC 8936 poll delivery, as SSF 1.0 §7.1 names them. */
export const PUSH_DELIVERY = 'urn:ietf:rfc:8935';
export const POLL_DELIVERY = 'urn:ietf:rfc:8936';

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/';
const RISC = 'https://schemas.openid.net/secevent/risc/event-type/';

/** The event types this transmitter sends (CAEP 1.0 §3, RISC 1.0 §2), and SSF 1.0 §8.1.4's verification. */
export const SSF_EVENTS = {
  sessionRevoked: `${CAEP}session-revoked`,
  credentialChange: `${CAEP}credential-change`,
  assuranceLevelChange: `${CAEP}assurance-level-change`,
  tokenClaimsChange: `${CAEP}token-claims-change`,
  accountDisabled: `${RISC}account-disabled`,
  accountEnabled: `${RISC}account-enabled`,
  accountPurged: `${RISC}account-purged`,
  identifierChanged: `${RISC}identifier-changed`,
  verification: 'https://schemas.openid.net/secevent/ssf/event-type/verification',
} as const;

/** Every event type a stream may request (verification is always delivered, never requested). */
export const SUPPORTED_EVENT_TYPES: readonly string[] = Object.values(SSF_EVENTS).filter(
  (uri) => uri !== SSF_EVENTS.verification,
);

/** RFC 9493 subject identifiers this transmitter states. */
export type SubjectIdentifier = { format: 'iss_sub'; iss: string; sub: string } | { format: 'opaque'; id: string };

/** One event about an account, before it is addressed to a receiver. */
export interface AccountEvent {
  type: string;
  /** The event's members (CAEP/RISC), without the subject. */
  payload: Record<string, unknown>;
  /** Whether the payload speaks of an e-mail address (sent only to a client holding scope `email`). */
  needsEmail?: boolean;
}

/** What a receipt says about an account, read from its opaque members. */
interface ReceiptFacts {
  kind: string;
  at: string;
  identityId?: unknown;
  actor?: { type: string };
}

/** CAEP 1.0 §2 `initiating_entity`, from who acted: a person, an operator (or automation), or a policy. */
function initiatingEntity(actor: ReceiptFacts['actor']): string {
  if (actor?.type === 'person') return 'user';
  if (actor?.type === 'admin_token') return 'admin';
  return 'policy';
}

/**
 * The CAEP or RISC event a receipt stands for (docs/events.md#shared-signals-streams-from-a-receivers-view),
 * or null when it stands for none. `event_timestamp` is the receipt's time (CAEP 1.0 §2).
 */
export function eventForReceipt(receipt: ReceiptFacts): AccountEvent | null {
  if (typeof receipt.identityId !== 'string') return null;
  const event_timestamp = Math.floor(Date.parse(receipt.at) / 1000);
  const caep = (type: string, payload: Record<string, unknown> = {}) => ({
    type,
    payload: { event_timestamp, ...payload },
  });
  switch (receipt.kind) {
    case 'session.revoked':
    case 'device.revoked':
      return caep(SSF_EVENTS.sessionRevoked, { initiating_entity: initiatingEntity(receipt.actor) });
    case 'passkey.added':
    case 'passkey.removed':
      // CAEP 1.0 §3.2: a passkey is a FIDO2 credential; which authenticator kind is not known here.
      return caep(SSF_EVENTS.credentialChange, {
        credential_type: 'fido2-platform',
        change_type: receipt.kind === 'passkey.added' ? 'create' : 'delete',
      });
    case 'totp.enabled':
    case 'totp.disabled':
      return caep(SSF_EVENTS.credentialChange, {
        credential_type: 'app',
        change_type: receipt.kind === 'totp.enabled' ? 'create' : 'delete',
      });
    case 'step_up.completed':
      // CAEP 1.0 §3.3: Keyplane's own levels (docs/assurance.md) under the `Custom` namespace.
      return caep(SSF_EVENTS.assuranceLevelChange, {
        namespace: 'Custom',
        current_level: 'sensitive',
        previous_level: 'passkey',
        change_direction: 'increase',
      });
    case 'account.renamed':
      return { ...caep(SSF_EVENTS.tokenClaimsChange, { claims: {} }), needsEmail: false };
    case 'email.verified':
      return { type: SSF_EVENTS.identifierChanged, payload: {}, needsEmail: true };
    case 'account.disabled':
      return { type: SSF_EVENTS.accountDisabled, payload: {} };
    case 'account.enabled':
      return { type: SSF_EVENTS.accountEnabled, payload: {} };
    case 'account.deleted':
      return { type: SSF_EVENTS.accountPurged, payload: {} };
    default:
      return null;
  }
}

/** RFC 8417 claims of one SET: no `sub` and no `exp` (SSF 1.0 §4.1.9), exactly one event. */
export interface SecurityEventClaims {
  iss: string;
  aud: string;
  jti: string;
  iat: number;
  sub_id: SubjectIdentifier;
  events: Record<string, Record<string, unknown>>;
  txn?: string;
}

/** Builds a SET's claims for one receiver. `now` in ms. */
export function buildSecurityEvent(input: {
  issuer: string;
  audience: string;
  jti: string;
  now: number;
  subject: SubjectIdentifier;
  type: string;
  payload: Record<string, unknown>;
  txn?: string;
}): SecurityEventClaims {
  return {
    iss: input.issuer,
    aud: input.audience,
    jti: input.jti,
    iat: Math.floor(input.now / 1000),
    sub_id: input.subject,
    events: { [input.type]: input.payload },
    ...(input.txn ? { txn: input.txn } : {}),
  };
}

/** Signs a SET: ES256, `kid` from the JWKS, `typ: secevent+jwt` (RFC 8417 §2.3). */
export function signSecurityEvent(claims: SecurityEventClaims, key: TokenSigningKey): Promise<string> {
  // node:crypto through fast-jwt (lib/crypto/jwt.ts), as tokens are: about a third of jose's WebCrypto
  // CPU (docs/performance.md#one-jws-library).
  return Promise.resolve(
    signJwt({ kid: key.kid, typ: 'secevent+jwt' }, { ...claims }, key.keyObject ?? key.privateKey, 'ES256'),
  );
}

/** SSF 1.0 §7.1: the transmitter configuration metadata. */
export function transmitterConfiguration(issuer: string, jwksUri: string): Record<string, unknown> {
  return {
    spec_version: '1_0',
    issuer,
    jwks_uri: jwksUri,
    delivery_methods_supported: [PUSH_DELIVERY, POLL_DELIVERY],
    configuration_endpoint: `${issuer}/ssf/streams`,
    status_endpoint: `${issuer}/ssf/streams/status`,
    verification_endpoint: `${issuer}/ssf/streams/verify`,
    add_subject_endpoint: `${issuer}/ssf/streams/subjects:add`,
    remove_subject_endpoint: `${issuer}/ssf/streams/subjects:remove`,
    authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
    default_subjects: 'NONE',
  };
}

/**
 * The account a receiver's subject names, when it names one of this issuer's: `iss_sub` with
 * our `iss` (subjects are public: `sub` is the identity id, docs/oidc.md), also as the `user`
 * of a `complex` subject (SSF 1.0 §3.3). Null for anything else, which is accepted and ignored.
 */
export function accountNamedBy(subject: unknown, issuer: string): string | null {
  if (typeof subject !== 'object' || subject === null) return null;
  const s = subject as Record<string, unknown>;
  if (s.format === 'complex') return accountNamedBy(s.user, issuer);
  if (s.format === 'iss_sub' && s.iss === issuer && typeof s.sub === 'string' && s.sub.length <= 200) return s.sub;
  return null;
}
