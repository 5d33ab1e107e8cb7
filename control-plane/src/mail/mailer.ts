import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';

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
    const info = await transport.sendMail({ from: options.from, ...mail });
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
