import {
  LogController,
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Logger } from 'pino';
import type { LogLevel } from '#config/types.js';
import { redactUrl } from '#lib/logging/request-log.js';

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

/**
 * The access log: one line per request, when it completes, with what it asked and how it ended.
 * Fastify's default writes a second line as each request arrives; it cost about as much as this
 * one and said nothing this one does not.
 *
 * A completed request's line holds only the serialized request (method, URL with its credentials
 * already cut by `redactUrl`, address), the status, the time and the request id: none of the
 * redaction paths above can match anything in it, yet pino's redaction copied and walked every
 * line, the largest single cost of a request such as `/healthz` (bench:healthz). So that line is
 * written through a child logger without redaction (`writeTo`), at the level the request's own
 * logger allows; a failed request's line carries the error and stays redacted.
 */
export class AccessLog extends LogController {
  #plain: FastifyBaseLogger | undefined;

  /** The logger completed requests are written to: the app's, without redaction. */
  writeTo(logger: FastifyBaseLogger): void {
    this.#plain = logger.child({}, { redact: [] });
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    if (error)
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else if (this.#plain === undefined)
      reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
    else if ((reply.log as Logger).isLevelEnabled('info'))
      this.#plain.info(
        { reqId: request.id, req: request, res: reply, responseTime: reply.elapsedTime },
        'request completed',
      );
  }
}
