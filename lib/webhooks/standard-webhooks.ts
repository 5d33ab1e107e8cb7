import { createHmac, randomBytes } from 'node:crypto';
import { fail } from '../errors/keyplane-error.js';

/** Standard Webhooks secrets are `whsec_` followed by the base64 of the key bytes. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 24;

/** A new signing secret, `whsec_<base64 of 24 random bytes>`: shown once, then stored sealed. */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

function secretKey(secret: string): Buffer {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) throw fail('internal', 'a webhook secret must start with whsec_');
  return Buffer.from(secret.slice(WEBHOOK_SECRET_PREFIX.length), 'base64');
}

/** What one delivery attempt signs: the message id, the attempt's time in whole seconds, the exact body. */
export interface SignedMessage {
  id: string;
  timestamp: number;
  body: string;
}

/**
 * The `webhook-signature` header (Standard Webhooks, "Signature scheme"): `v1,<base64 HMAC-SHA256
 * of "id.timestamp.body">` for each secret, space-separated, so that during a rotation the
 * receiver verifies with whichever secret it holds.
 */
export function signWebhookMessage(message: SignedMessage, secrets: readonly string[]): string {
  const signed = `${message.id}.${message.timestamp}.${message.body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', secretKey(secret)).update(signed).digest('base64')}`)
    .join(' ');
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders(message: SignedMessage, secrets: readonly string[]): Record<string, string> {
  return {
    'webhook-id': message.id,
    'webhook-timestamp': String(message.timestamp),
    'webhook-signature': signWebhookMessage(message, secrets),
  };
}
