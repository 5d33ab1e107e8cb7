import { write, writeSync } from 'node:fs';

/** Lines are written out once this many bytes (UTF-16 units, close enough) have gathered. */
const CHUNK = 16 * 1024;
/**
 * What may wait for a reader that has stalled (a log shipper falling behind) before lines are
 * dropped: requests are never held up by their log, and memory stays bounded. The count of
 * dropped lines is written as a line of its own once the reader drains.
 */
const MAX_PENDING = 16 * 1024 * 1024;
/** A write refused with EAGAIN (a non-blocking pipe that is full) is tried again after this. */
const RETRY_MS = 10;
/** How many such waits a synchronous flush (at exit) makes before it gives up on a reader: 2 s. */
const EXIT_WAITS = 200;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** Destinations holding lines not yet handed to the system: written synchronously at exit. */
const unwritten = new Set<BufferedLog>();
let exitHooked = false;

/**
 * Where a server's JSON log lines go when nothing else is given: a file descriptor (standard error
 * by default, docs/cli.md), buffered and written asynchronously. `process.stderr` on a pipe, like
 * pino's default destination, writes each line with a synchronous system call inside the request
 * that logs it, so a stalled reader would stall every request; pino's asynchronous destination
 * (SonicBoom) cost about 2.4 µs of CPU per line in its string bookkeeping, against 0.4 µs here
 * (docs/performance-history.md, bench:healthz). Lines are kept as they come, joined and written in
 * one call once 16 KiB have gathered, whatever is gathered is written at least every `flushMs` (a
 * quiet server's lines appear within that), and what is left is written synchronously when the
 * process exits (a SIGKILL can lose the lines of its last moment) or when pino logs at `fatal`.
 */
export function logDestination(fd = 2, flushMs = 250): NodeJS.WritableStream {
  // pino takes any object with `write(line)` (and `flushSync` for fatal lines) as its stream.
  return new BufferedLog(fd, flushMs) as unknown as NodeJS.WritableStream;
}

class BufferedLog {
  readonly #fd: number;
  readonly #flushMs: number;
  #lines: string[] = [];
  #length = 0;
  /** The bytes handed to an asynchronous write that has not completed. */
  #writing: Buffer | undefined;
  /** A write refused with EAGAIN, waiting to be tried again: the bytes not yet written. */
  #retry: { bytes: Buffer; offset: number; timer: NodeJS.Timeout } | undefined;
  #timer: NodeJS.Timeout | undefined;
  #dropped = 0;

  constructor(fd: number, flushMs: number) {
    this.#fd = fd;
    this.#flushMs = flushMs;
  }

  write(line: string): boolean {
    if (this.#length >= MAX_PENDING) {
      this.#dropped++;
      return true;
    }
    this.#lines.push(line);
    this.#length += line.length;
    if (this.#length >= CHUNK) this.#writeOut();
    else if (this.#timer === undefined) this.#timer = setTimeout(() => this.#flush(), this.#flushMs).unref();
    if (!exitHooked) {
      exitHooked = true;
      process.once('exit', () => {
        for (const log of unwritten) log.flushSync();
      });
    }
    unwritten.add(this);
    return true;
  }

  /** Writes every gathered line now, blocking: at exit, and before pino's `fatal` lines. */
  flushSync(): void {
    this.#clearTimer();
    const retry = this.#retry;
    if (retry !== undefined) {
      clearTimeout(retry.timer);
      this.#retry = undefined;
      this.#writing = undefined;
      this.#writeSync(retry.bytes, retry.offset);
    }
    const bytes = this.#take();
    if (bytes !== undefined) this.#writeSync(bytes, 0);
    this.#settle();
  }

  #writeSync(bytes: Buffer, from: number): void {
    let waits = 0;
    for (let offset = from; offset < bytes.length;) {
      try {
        offset += writeSync(this.#fd, bytes, offset);
      } catch (error) {
        // A full non-blocking pipe: wait for the reader, a while; anything else leaves nowhere to write.
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || ++waits > EXIT_WAITS) return;
        Atomics.wait(PAUSE, 0, 0, RETRY_MS);
      }
    }
  }

  /** Leaves the exit list once nothing is gathered and nothing is being written. */
  #settle(): void {
    if (this.#length === 0 && this.#writing === undefined) unwritten.delete(this);
  }

  #flush(): void {
    this.#timer = undefined;
    this.#writeOut();
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The gathered lines as one buffer (with a line for any that were dropped), or nothing. */
  #take(): Buffer | undefined {
    if (this.#length === 0) return undefined;
    if (this.#dropped > 0) {
      this.#lines.push(`{"level":40,"time":${Date.now()},"msg":"log lines dropped","dropped":${this.#dropped}}\n`);
      this.#dropped = 0;
    }
    const bytes = Buffer.from(this.#lines.join(''));
    this.#lines = [];
    this.#length = 0;
    return bytes;
  }

  /** Starts one asynchronous write of what has gathered, unless one is under way. */
  #writeOut(): void {
    if (this.#writing !== undefined) return;
    this.#clearTimer();
    const bytes = this.#take();
    if (bytes !== undefined) this.#send(bytes, 0);
    else this.#settle();
  }

  #send(bytes: Buffer, offset: number): void {
    this.#writing = bytes;
    write(this.#fd, bytes, offset, bytes.length - offset, null, (error, written) => {
      if (error) {
        if (error.code === 'EAGAIN') {
          const timer = setTimeout(() => {
            this.#retry = undefined;
            this.#send(bytes, offset);
          }, RETRY_MS).unref();
          this.#retry = { bytes, offset, timer };
          return;
        }
        // The descriptor is gone or refuses writes: what was in this write cannot be kept anywhere.
      } else if (offset + written < bytes.length) {
        this.#send(bytes, offset + written);
        return;
      }
      this.#writing = undefined;
      if (this.#length >= CHUNK) this.#writeOut();
      else if (this.#length > 0 && this.#timer === undefined)
        this.#timer = setTimeout(() => this.#flush(), this.#flushMs).unref();
      this.#settle();
    });
  }
}
