import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long a connection that answered before its request body arrived keeps reading (and
 * discarding) that body before it is cut: nginx's `lingering_time` idea, shorter.
 */
export const LINGER_MS = 10_000;

/**
 * Makes the connection of `req` close gently when node closes it after the answer (a 413 sent
 * before the body was read, or any `Connection: close` answer): the answer is flushed and the
 * write side half-closed (FIN), and the rest of the body is read and discarded until it is
 * complete, the client closes, or `lingerMs` passes; only then is the socket destroyed. Closing at
 * once, with the client's bytes unread, makes the kernel answer them with a reset (RFC 9112 §9.6),
 * which throws away the answer a client had not read yet: under load, a client sending a huge
 * body saw "connection reset" instead of 413 `payload_too_large`.
 *
 * Node's HTTP server ends such a connection through `socket.destroySoon()` once the response is
 * written; this replaces it for the request's socket (the next request on a kept-alive socket
 * installs its own). Its parser goes on discarding the body (`req._dump()`) meanwhile.
 */
export function lingerOnClose(req: IncomingMessage, lingerMs = LINGER_MS): void {
  const socket = req.socket as Socket & { destroySoon?: () => void };
  if (!socket || typeof socket.destroySoon !== 'function') return;
  socket.destroySoon = function lingeringClose(this: Socket) {
    const cut = () => {
      clearTimeout(timer);
      socket.destroy();
    };
    const timer = setTimeout(cut, lingerMs);
    timer.unref();
    if (socket.writable) socket.end();
    if (req.complete || req.destroyed) {
      // Nothing more is coming: close as node would (once the answer is flushed).
      if (socket.writableFinished) return cut();
      socket.once('finish', cut);
      return;
    }
    req.once('end', cut);
    req.once('close', cut);
    socket.once('end', cut);
    socket.once('close', () => clearTimeout(timer));
    req.resume();
  };
}
