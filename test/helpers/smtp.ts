import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

interface Tap {
  teardown(fn: () => unknown): void;
}

/** A real SMTP server on a loopback port that keeps every message it receives. */
export async function startSmtpServer(
  t: Tap,
): Promise<{ url: string; received: ReceivedMail[]; next(): Promise<ReceivedMail> }> {
  const received: ReceivedMail[] = [];
  const waiters: Array<(mail: ReceivedMail) => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const mail = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        };
        received.push(mail);
        waiters.shift()?.(mail);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.server.address() as AddressInfo;
  let taken = 0;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    next: () => {
      const index = taken++;
      if (received[index]) return Promise.resolve(received[index]!);
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

/**
 * Undoes quoted-printable soft breaks and escapes in the parts sent quoted-printable (a 7bit part's
 * `=` is itself: `?token=4A…` must stay as it is), so a URL can be found in a raw message.
 */
export function decodeQuotedPrintable(raw: string): string {
  return raw
    .split(/(?=^--[^\r\n]+\r?$)/m)
    .map((part) =>
      /^Content-Transfer-Encoding:\s*quoted-printable/im.test(part)
        ? part
            .replace(/=\r?\n/g, '')
            .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
        : part,
    )
    .join('');
}

export function linkIn(raw: string, path: string): string | null {
  const text = decodeQuotedPrintable(raw);
  const match = text.match(new RegExp(`https?://[^\\s"<>]*${path.replace(/\//g, '\\/')}\\?[^\\s"<>]+`));
  return match ? match[0].replace(/&amp;/g, '&') : null;
}

/** The messages in a data dir's dev outbox (RFC 5322 files), oldest first. */
export async function readOutbox(dataDir: string): Promise<string[]> {
  const { readdirSync, readFileSync, existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  const dir = join(dataDir, 'outbox');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .map((name) => readFileSync(join(dir, name), 'utf8'));
}
