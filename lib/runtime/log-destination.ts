import { write, writeSync } from 'node:fs';

/** Gathered bytes are written out once this many have gathered. */
const WRITE_AT = 16 * 1024;
/** The buffer lines are encoded into: room for WRITE_AT and a line that would not fit beside it. */
const BUFFER_BYTES = 64 * 1024;
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

/** Destinations holding bytes not yet written: written synchronously at exit. */
const unwritten = new Set<BufferedLog>();
let exitHooked = false;

/**
 * Where a server's JSON log lines go when nothing else is given: a file descriptor (standard error
 * by default, docs/cli.md), buffered and written asynchronously. `process.stderr` on a pipe, like
 * pino's default destination, writes each line with a synchronous system call inside the request
 * that logs it, so a stalled reader would stall every request; pino's asynchronous destination
 * (SonicBoom) cost about 2.4 µs of CPU per line in its string bookkeeping (docs/performance-history.md,
 * bench:healthz). Here each line is encoded once, straight into a buffer; a buffer is written in one
 * call once 16 KiB have gathered, whatever has gathered is written at least every `flushMs` (a quiet
 * server's lines appear within that), and what is left is written synchronously when the process
 * exits (a SIGKILL can lose the lines of its last moment) or when pino logs at `fatal`.
 */
export function logDestination(fd = 2, flushMs = 250): NodeJS.WritableStream {
  // pino takes any object with `write(line)` (and `flushSync` for fatal lines) as its stream.
  return new BufferedLog(fd, flushMs) as unknown as NodeJS.WritableStream;
}

/** A write under way: the buffer, how far it has been written, and the timer of a retry after EAGAIN. */
interface Writing {
  bytes: Buffer;
  offset: number;
  retry?: NodeJS.Timeout;
}

class BufferedLog {
  readonly #fd: number;
  readonly #flushMs: number;
  /** The buffer lines are being encoded into, and how much of it is used. */
  #buffer = Buffer.allocUnsafeSlow(BUFFER_BYTES);
  #used = 0;
  /** Filled buffers waiting for their write, oldest first, and their bytes. */
  #queue: Buffer[] = [];
  #queued = 0;
  #writing: Writing | undefined;
  #timer: NodeJS.Timeout | undefined;
  #dropped = 0;

  constructor(fd: number, flushMs: number) {
    this.#fd = fd;
    this.#flushMs = flushMs;
  }

  write(line: string): boolean {
    if (this.#queued >= MAX_PENDING) {
      this.#dropped++;
      return true;
    }
    // At most three bytes of UTF-8 per UTF-16 unit: a line that might not fit starts a new buffer.
    if (this.#used + line.length * 3 > BUFFER_BYTES) {
      this.#seal();
      if (line.length * 3 > BUFFER_BYTES) this.#enqueue(Buffer.from(line));
    }
    if (line.length * 3 <= BUFFER_BYTES) this.#used += this.#buffer.write(line, this.#used);
    if (this.#used >= WRITE_AT) this.#seal();
    if (this.#queue.length > 0) this.#writeOut();
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

  /** Writes everything gathered now, blocking: at exit, and before pino's `fatal` lines. */
  flushSync(): void {
    this.#clearTimer();
    const writing = this.#writing;
    // A write waiting to be tried again is written here. One still in the thread pool is left to it:
    // whether it wrote cannot be known here, and writing it again could repeat or tear lines; if the
    // reader had stalled, those bytes (at most one buffer) are lost, as with pino's own destination.
    if (writing?.retry !== undefined) {
      clearTimeout(writing.retry);
      this.#writing = undefined;
      this.#writeSync(writing.bytes, writing.offset);
    }
    this.#seal();
    for (const bytes of this.#queue) this.#writeSync(bytes, 0);
    this.#queue = [];
    this.#queued = 0;
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
    if (this.#used === 0 && this.#queue.length === 0 && this.#writing === undefined) unwritten.delete(this);
  }

  #flush(): void {
    this.#timer = undefined;
    this.#seal();
    this.#writeOut();
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Queues what the current buffer holds (with a line for any dropped) and starts a new one. */
  #seal(): void {
    if (this.#dropped > 0 && this.#queued < MAX_PENDING) {
      const notice = `{"level":40,"time":${Date.now()},"msg":"log lines dropped","dropped":${this.#dropped}}\n`;
      this.#dropped = 0;
      this.#enqueue(Buffer.from(notice));
    }
    if (this.#used === 0) return;
    this.#enqueue(this.#buffer.subarray(0, this.#used));
    this.#buffer = Buffer.allocUnsafeSlow(BUFFER_BYTES);
    this.#used = 0;
  }

  #enqueue(bytes: Buffer): void {
    this.#queue.push(bytes);
    this.#queued += bytes.length;
  }

  /** Starts writing the oldest queued buffer, unless a write is under way. */
  #writeOut(): void {
    if (this.#writing !== undefined) return;
    this.#clearTimer();
    const bytes = this.#queue.shift();
    if (bytes === undefined) {
      this.#settle();
      return;
    }
    this.#queued -= bytes.length;
    this.#send(bytes, 0);
  }

  #send(bytes: Buffer, offset: number): void {
    const writing: Writing = { bytes, offset };
    this.#writing = writing;
    write(this.#fd, bytes, offset, bytes.length - offset, null, (error, written) => {
      if (error) {
        if (error.code === 'EAGAIN') {
          writing.retry = setTimeout(() => this.#send(bytes, offset), RETRY_MS).unref();
          return;
        }
        // The descriptor is gone or refuses writes: what was in this write cannot be kept anywhere.
      } else if (offset + written < bytes.length) {
        this.#send(bytes, offset + written);
        return;
      }
      this.#writing = undefined;
      // The reader has taken everything queued: time to say what was dropped while it could not.
      if (this.#queue.length === 0 && this.#dropped > 0) this.#seal();
      if (this.#queue.length > 0) this.#writeOut();
      else if (this.#used > 0 && this.#timer === undefined)
        this.#timer = setTimeout(() => this.#flush(), this.#flushMs).unref();
      else this.#settle();
    });
  }
}
