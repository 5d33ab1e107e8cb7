import { Writable } from 'node:stream';

/**
 * `keyplane up` is run by a person at a terminal, so it does not show the servers' JSON log lines
 * (one per request): it shows warnings and errors as one short line each. `keyplane control-plane`
 * and `keyplane gateway` keep the JSON lines for log collectors. See docs/cli.md#keyplane-up.
 */

/** pino's numeric levels from warn up. */
const LEVEL_NAMES: Record<number, string> = { 40: 'warning', 50: 'error', 60: 'fatal' };
const WARN = 40;

interface LogRecord {
  level?: unknown;
  msg?: unknown;
  err?: { message?: unknown };
  setupUrl?: unknown;
}

/**
 * One pino JSON line as a short human line, or null for what a person need not see: anything
 * below warn, and the founder setup link, which `up` prints once in its summary.
 */
export function formatLogLine(line: string, label: string): string | null {
  let record: LogRecord;
  try {
    record = JSON.parse(line) as LogRecord;
  } catch {
    return line.trim() === '' ? null : `${label}: ${line.trim()}`;
  }
  const level = typeof record.level === 'number' ? record.level : 0;
  if (level < WARN || record.setupUrl !== undefined) return null;
  const name = LEVEL_NAMES[Math.min(60, Math.floor(level / 10) * 10)] ?? 'warning';
  const message = typeof record.msg === 'string' ? record.msg : '(no message)';
  const cause =
    typeof record.err?.message === 'string' && record.err.message !== message ? `: ${record.err.message}` : '';
  return `${name} [${label}] ${message}${cause}`;
}

/** A stream to hand a server as its log stream: JSON lines in, short human lines out. */
export function humanLogStream(out: NodeJS.WritableStream, label: string): Writable {
  let pending = '';
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const shown = formatLogLine(line, label);
        if (shown !== null) out.write(shown + '\n');
      }
      done();
    },
  });
}
