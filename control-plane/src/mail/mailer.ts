import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Attachment } from 'nodemailer/lib/mailer/index.js';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

export interface Mailer {
  readonly kind: 'smtp' | 'outbox';
  /** Sends now and resolves once the SMTP server (or the outbox file) has the message. */
  send(mail: OutgoingMail): Promise<void>;
  /**
   * Sends in the background: the request that caused the mail answers without waiting, so
   * whether a mail went out is not visible in the response time (magic/request answers alike
   * for known and unknown addresses). Failures are logged, never thrown.
   */
  enqueue(mail: OutgoingMail): void;
  /** Resolves when every enqueued mail has been handed over (tests, shutdown). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export interface MailerOptions {
  smtpUrl?: string | undefined;
  from: string;
  dataDir: string;
  onError?: (error: unknown) => void;
}

export const OUTBOX_DIR = 'outbox';

// RFC 5322 §2.1.1: a line may be 998 characters. Quoted-printable would fold a long link at 76,
// with "=" soft breaks a person reading the .eml (or a plain-text client) cannot click through.
const MAX_LINE = 998;

/** An ASCII part whose lines fit is sent as 7bit, unfolded; anything else is left to nodemailer. */
function unwrappedPart(type: string, content: string | undefined): string | Attachment | undefined {
  if (content === undefined) return undefined;
  const fits = /^[\x20-\x7e\r\n\t]*$/.test(content) && content.split(/\r?\n/).every((line) => line.length <= MAX_LINE);
  if (!fits) return content;
  const body = content.replace(/\r?\n/g, '\r\n');
  return { raw: `Content-Type: ${type}; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n${body}` };
}

/**
 * Outgoing mail through nodemailer: SMTP when `mail.smtpUrl` (KEYPLANE_SMTP_URL) is set,
 * otherwise RFC 5322 `.eml` files in `<dataDir>/outbox/`, one per message, readable by any mail
 * client and by tests.
 */
export function createMailer(options: MailerOptions): Mailer {
  const outbox = join(options.dataDir, OUTBOX_DIR);
  const transport: Transporter = options.smtpUrl
    ? nodemailer.createTransport(options.smtpUrl)
    : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const pending = new Set<Promise<void>>();

  async function send(mail: OutgoingMail): Promise<void> {
    const info = await transport.sendMail({
      from: options.from,
      ...mail,
      // Only as parts of multipart/alternative: a `raw` single part would be the whole message and
      // drop its headers (Subject, From, To); a text-only message (the contact form's, no link) is
      // left to nodemailer.
      ...(mail.html === undefined
        ? {}
        : { text: unwrappedPart('text/plain', mail.text)!, html: unwrappedPart('text/html', mail.html)! }),
    });
    if (!options.smtpUrl) {
      mkdirSync(outbox, { recursive: true, mode: 0o700 });
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(6).toString('hex')}.eml`;
      writeFileSync(join(outbox, name), info.message as Buffer, { mode: 0o600 });
    }
  }

  return {
    kind: options.smtpUrl ? 'smtp' : 'outbox',
    send,
    enqueue(mail) {
      const job = send(mail)
        .catch((error) => options.onError?.(error))
        .finally(() => pending.delete(job));
      pending.add(job);
    },
    async idle() {
      while (pending.size) await Promise.all([...pending]);
    },
    async close() {
      await this.idle();
      transport.close();
    },
  };
}
