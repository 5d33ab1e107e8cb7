import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AssuranceLevel } from './assurance.js';
import type { KeyplaneClient } from './client.js';
import { parseCookies, serializeCookie, type CookieJar } from './cookie-session.js';
import { answerReservedPath, gate, type Answer, type RequestFacts } from './gate.js';
import { WebSessions, type Session, type WebOptions } from './web.js';

/** Express's request, as far as the SDK needs it (no Express types at run time). */
export type KeyplaneRequest = IncomingMessage & { originalUrl?: string; keyplane?: Session | null };
type Next = (error?: unknown) => void;
export type Middleware = (request: KeyplaneRequest, response: ServerResponse, next: Next) => void;

export interface KeyplaneExpress {
  /** `app.use(kp.middleware)`: the sign-in paths and `req.keyplane` for every later route. */
  middleware: Middleware;
  requireAuth: Middleware;
  requireAssurance(level: AssuranceLevel): Middleware;
}

function jarOf(request: IncomingMessage, response: ServerResponse): CookieJar {
  const cookies = parseCookies(request.headers.cookie);
  return {
    all: () => cookies,
    set(name, value, options) {
      cookies[name] = value;
      response.appendHeader('set-cookie', serializeCookie(name, value, options));
    },
    clear(name, options) {
      delete cookies[name];
      response.appendHeader('set-cookie', serializeCookie(name, '', { ...options, maxAgeSeconds: 0 }));
    },
  };
}

function factsOf(request: KeyplaneRequest): RequestFacts {
  return {
    method: request.method ?? 'GET',
    url: request.originalUrl ?? request.url ?? '/',
    ...(request.headers.origin ? { origin: request.headers.origin } : {}),
    ...(request.headers.accept ? { accept: request.headers.accept } : {}),
  };
}

function send(response: ServerResponse, answer: Answer): void {
  response.writeHead(answer.status, answer.headers).end(answer.body ?? '');
}

/** Keyplane sign-in for an Express (or any connect-style) app. */
export function keyplaneExpress(client: KeyplaneClient, options: WebOptions): KeyplaneExpress {
  const web = new WebSessions(client, options);
  const guard =
    (level?: AssuranceLevel): Middleware =>
    (request, response, next) => {
      const answer = gate(web, factsOf(request), request.keyplane ?? null, level);
      if (answer) send(response, answer);
      else next();
    };
  return {
    middleware(request, response, next) {
      const jar = jarOf(request, response);
      answerReservedPath(web, factsOf(request), jar)
        .then(async (reserved) => {
          if (reserved) return send(response, reserved);
          request.keyplane = await web.session(jar);
          next();
        })
        .catch(next);
    },
    requireAuth: guard(),
    requireAssurance: guard,
  };
}
