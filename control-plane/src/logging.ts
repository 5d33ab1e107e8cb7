import {
  LogController,
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import pino, { type Logger } from 'pino';
import type { LogLevel } from '#config/types.js';
import { redactUrl } from '#lib/logging/request-log.js';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogMethod = (...args: unknown[]) => void;

/**
 * A request's logger, made when first used. Fastify gives every request a child logger bound to
 * its id, and most requests never log through it (their access line is written by `AccessLog`):
 * pino's child cost about 1.5 µs of a `/healthz` request (bench:healthz). Until something is
 * logged, the level is the parent's (or the route's `logLevel`, which makes the child at once).
 */
class RequestLogger {
  #made: Logger | undefined;
  readonly #parent: Logger;
  readonly #bindings: Record<string, unknown>;
  readonly #options: { level?: string };
  declare fatal: LogMethod;
  declare error: LogMethod;
  declare warn: LogMethod;
  declare info: LogMethod;
  declare debug: LogMethod;
  declare trace: LogMethod;
  declare silent: LogMethod;

  constructor(parent: Logger, bindings: Record<string, unknown>, options: { level?: string }) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
    if (options.level !== undefined) this.#real();
  }

  #real(): Logger {
    return (this.#made ??= this.#parent.child(this.#bindings, this.#options));
  }

  get level(): string {
    return this.#made?.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.#made ?? this.#parent).isLevelEnabled(level);
  }

  child(bindings: Record<string, unknown>, options?: Record<string, unknown>): Logger {
    return this.#real().child(bindings, options);
  }

  static {
    for (const level of LEVELS)
      Object.defineProperty(RequestLogger.prototype, level, {
        value: function (this: RequestLogger, ...args: unknown[]) {
          const real = this.#real();
          (real[level] as LogMethod).apply(real, args);
        },
      });
  }
}

/** fastify's `childLoggerFactory`: each request's logger, made on first use (`RequestLogger`). */
export function requestLogger(
  this: unknown,
  logger: FastifyBaseLogger,
  bindings: Record<string, unknown>,
  options: { level?: string },
): FastifyBaseLogger {
  return new RequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}

/** pino options: JSON lines, credentials redacted by path and by query parameter. */
export function loggerOptions(level: LogLevel, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers.dpop',
        'req.headers["x-auth-assertion"]',
        'res.headers["set-cookie"]',
        '*.password',
        '*.secret',
        '*.client_secret',
        '*.token',
        '*.code',
      ],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { method: string; url: string; ip?: string; id?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        remoteAddress: req.ip,
      }),
    },
  };
}

/** The few methods a server answers, each written as JSON once. */
const METHOD_JSON = new Map<string, string>();

function methodJson(method: string): string {
  let json = METHOD_JSON.get(method);
  if (json === undefined) {
    json = JSON.stringify(method);
    // Any token is a method to the HTTP parser; only the common ones are kept.
    if (METHOD_JSON.size < 16) METHOD_JSON.set(method, json);
  }
  return json;
}

/**
 * The access log: one line per request, when it completes, with what it asked and how it ended.
 * Fastify's default writes a second line as each request arrives; it cost about as much as this
 * one and said nothing this one does not.
 *
 * A completed request's line has one shape: level, time, the logger's bindings, the request id,
 * the request (method, URL with its credentials already cut by `redactUrl`, address), the status,
 * the time taken and the message. pino built it generically (serializers, redaction paths that
 * cannot match anything in it, a key walk), a third of what a request such as `/healthz` costs
 * beyond a bare fastify (bench:healthz); so it is written here as the same JSON pino writes, to
 * pino's own stream, with pino's bindings, when the request's level allows `info`. The test in
 * test/control-plane/http/access-log.test.ts holds it byte for byte to what pino writes. A failed
 * request's line carries the error and goes through pino, redacted.
 */
export class AccessLog extends LogController {
  #write: ((line: string) => void) | undefined;
  #bindings = '';

  /** The logger completed requests are written to: the app's stream, with its bindings. */
  writeTo(logger: FastifyBaseLogger): void {
    const stream = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[pino.symbols.streamSym];
    this.#bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
    if (stream) this.#write = (line) => void stream.write(line);
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    if (error)
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else if (this.#write === undefined)
      reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
    else if ((reply.log as Logger).isLevelEnabled('info')) this.#write(this.completedLine(request, reply));
  }

  /** The completed request's line, as pino writes `{reqId, req, res, responseTime}` at info with the message. */
  completedLine(request: FastifyRequest, reply: FastifyReply): string {
    // Without X-Forwarded-For, `request.ip` is the socket's address; asking fastify walks the
    // trusted-proxy chain all the same.
    const ip = request.headers['x-forwarded-for'] === undefined ? request.socket.remoteAddress : request.ip;
    const address = ip === undefined ? '' : `,"remoteAddress":${JSON.stringify(ip)}`;
    return (
      `{"level":30,"time":${Date.now()}${this.#bindings},"reqId":${JSON.stringify(request.id)}` +
      `,"req":{"method":${methodJson(request.method)},"url":${JSON.stringify(redactUrl(request.url))}${address}}` +
      `,"res":{"statusCode":${reply.statusCode}},"responseTime":${reply.elapsedTime},"msg":"request completed"}\n`
    );
  }
}
