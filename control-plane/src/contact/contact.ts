import { fail } from '#lib/errors/keyplane-error.js';
import { enforceLimit } from '#lib/errors/rate-limited.js';
import { normalizeEmailAddress } from '#lib/magic/email-address.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import { randomId } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices } from '../context.js';

export const CONTACT_TOPICS = ['general', 'security', 'privacy', 'abuse', 'support'] as const;
export type ContactTopic = (typeof CONTACT_TOPICS)[number];

export type ContactServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'events' | 'state' | 'mailer' | 'now' | 'notify'
>;

export interface ContactInput {
  email: string;
  topic: string;
  message: string;
}

// Control characters other than tab and line breaks never reach the store or the operator's mail.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u2028\u2029]/g;

/** The message as kept: line breaks normalised, control characters removed, trimmed. */
export function cleanMessage(raw: string): string {
  return raw.replace(/\r\n?/g, '\n').replace(CONTROL, '').trim();
}

async function throttle(services: ContactServices, ip: string, email: string): Promise<void> {
  const limiter = new RateLimiter(services.state);
  const limit = { max: services.config.contact.perAddressPerHour, windowMs: 3_600_000 };
  // Both per client address and per sender address: one sender cannot flood from many IPs, nor one IP as many senders.
  for (const [bucket, subject] of [
    ['contact-ip', ip],
    ['contact-sender', sha256Hex(`keyplane:contact:v1:${email}`)],
  ] as const) {
    const decision = await limiter.hit(bucket, subject, limit);
    enforceLimit(decision, 'too many contact messages; try again later');
  }
}

/**
 * Deletes the messages older than `contact.retentionDays` (the control plane runs it hourly):
 * the sender's address and words are kept no longer than the operator said. Returns how many.
 */
export function purgeOldContacts(services: Pick<ContactServices, 'config' | 'storage' | 'now'>): Promise<number> {
  return services.storage.contacts.purgeBefore(services.now() - services.config.contact.retentionDays * 86_400_000);
}

/**
 * Takes one contact message: validates it, throttles per client and sender address, mails the
 * operator (when `contact.operatorAddress` is set), then stores it with its `contact.received`
 * receipt in one transaction. A mail failure does not lose the message: it is stored unmailed
 * and the operator is told on the console.
 */
export async function receiveContact(
  services: ContactServices,
  input: ContactInput,
  ip: string,
): Promise<{ contactId: string; mailed: boolean; receipt?: string }> {
  const email = normalizeEmailAddress(input.email);
  if (!email) throw fail('invalid_email', 'email must be an address you can be answered at');
  if (!(CONTACT_TOPICS as readonly string[]).includes(input.topic))
    throw fail('invalid_request', `topic must be one of ${CONTACT_TOPICS.join(', ')}`);
  const message = cleanMessage(input.message);
  if (message.length === 0) throw fail('invalid_request', 'the message is empty');
  const max = services.config.contact.maxMessageChars;
  if ([...message].length > max) throw fail('message_too_long', `the message is longer than ${max} characters`);
  await throttle(services, ip, email);

  const contactId = randomId('ctc');
  const createdAt = services.now();
  const operator = services.config.contact.operatorAddress;
  let mailed = false;
  if (operator) {
    try {
      await services.mailer.send({
        to: operator,
        subject: `[Keyplane contact] ${input.topic} (${contactId})`,
        text: `A message came through ${services.config.issuer}/contact.\n\nFrom: ${email}\nTopic: ${input.topic}\nId: ${contactId}\nReceived: ${new Date(createdAt).toISOString()}\n\n${message}\n`,
      });
      mailed = true;
    } catch (error) {
      services.notify(
        `contact message ${contactId} was stored but could not be mailed to the operator: ${(error as Error).message}`,
      );
    }
  }
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.contacts.insert({
      contactId,
      email,
      topic: input.topic,
      message,
      createdAt,
      mailedAt: mailed ? services.now() : null,
    });
    return services.events.record(tx, {
      type: 'contact.received',
      at: createdAt,
      outcome: 'success',
      contactId,
      topic: input.topic,
      mailed,
    });
  });
  return { contactId, mailed, ...(receipt ? { receipt } : {}) };
}
