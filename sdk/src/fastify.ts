import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { AssuranceLevel } from './assurance.js';
import type { KeyplaneClient } from './client.js';
import { parseCookies, serializeCookie, type CookieJar } from './cookie-session.js';
import { answerReservedPath, gate, type Answer, type RequestFacts } from './gate.js';
import { WebSessions, type Session, type WebOptions } from './web.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in user, or null (filled by the Keyplane plugin). */
    keyplane: Session | null;
  }
}

export interface KeyplaneFastify {
  /** Register with `app.register(kp.plugin)`: the sign-in paths and `request.keyplane` for every route. */
  plugin: (app: FastifyInstance) => Promise<void>;
  /** preHandler: a signed-in user, else sign-in (pages) or 401 (API). */
  requireAuth: preHandlerAsyncHookHandler;
  /** preHandler: a user at `level` or above, else a step-up (pages) or 401 `insufficient_user_authentication` (API). */
  requireAssurance(level: AssuranceLevel): preHandlerAsyncHookHandler;
}

function jarOf(request: FastifyRequest, reply: FastifyReply): CookieJar {
  const cookies = parseCookies(request.headers.cookie);
  return {
    all: () => cookies,
    set(name, value, options) {
      cookies[name] = value;
      void reply.header('set-cookie', serializeCookie(name, value, options));
    },
    clear(name, options) {
      delete cookies[name];
      void reply.header('set-cookie', serializeCookie(name, '', { ...options, maxAgeSeconds: 0 }));
    },
  };
}

function factsOf(request: FastifyRequest): RequestFacts {
  return {
    method: request.method,
    url: request.url,
    ...(request.headers.origin ? { origin: request.headers.origin } : {}),
    ...(request.headers.accept ? { accept: request.headers.accept } : {}),
  };
}

function send(reply: FastifyReply, answer: Answer): FastifyReply {
  return reply
    .code(answer.status)
    .headers(answer.headers)
    .send(answer.body ?? '');
}

/** Keyplane sign-in for a fastify app. */
export function keyplaneFastify(client: KeyplaneClient, options: WebOptions): KeyplaneFastify {
  const web = new WebSessions(client, options);
  const guard = (level?: AssuranceLevel): preHandlerAsyncHookHandler =>
    async function (request, reply) {
      const answer = gate(web, factsOf(request), request.keyplane, level);
      if (answer) return send(reply, answer);
    };
  const plugin = async (app: FastifyInstance) => {
    app.decorateRequest('keyplane', null);
    app.addHook('onRequest', async (request, reply) => {
      const jar = jarOf(request, reply);
      const reserved = await answerReservedPath(web, factsOf(request), jar);
      if (reserved) return send(reply, reserved);
      request.keyplane = await web.session(jar);
    });
  };
  // Not encapsulated: the hook must reach the routes of the app that registers it.
  Object.assign(plugin, { [Symbol.for('skip-override')]: true });
  return { plugin, requireAuth: guard(), requireAssurance: (level) => guard(level) };
}
