import pino from 'pino';

/**
 * Where a server's JSON log lines go when nothing else is given: a file descriptor (standard error
 * by default, docs/cli.md), buffered and written asynchronously. `process.stderr` on a pipe, like
 * pino's default destination, writes each line with a synchronous system call inside the request
 * that logs it, so a reader that stalls (a log shipper falling behind) would stall every request,
 * and an asynchronous write per line still costs a thread-pool round trip per request
 * (bench:healthz, docs/performance.md). Lines are gathered up to 4 KiB and written together,
 * whatever is gathered is written at least every `flushMs` (a quiet server's lines appear within
 * that), and pino flushes what is left when the process exits (a SIGKILL can lose the lines of its
 * last moment).
 */
export function logDestination(fd = 2, flushMs = 250): NodeJS.WritableStream {
  const stream = pino.destination({ dest: fd, sync: false, minLength: 4096 });
  // Flushed only when something was written since: an empty flush would still write.
  let unflushed = false;
  const write = stream.write.bind(stream);
  stream.write = (line: string) => {
    unflushed = true;
    return write(line);
  };
  const flush = setInterval(() => {
    if (!unflushed) return;
    unflushed = false;
    stream.flush();
  }, flushMs);
  flush.unref();
  stream.on('close', () => clearInterval(flush));
  // SonicBoom is what pino writes to, not a whole Node stream; pino takes it as one.
  return stream as unknown as NodeJS.WritableStream;
}
