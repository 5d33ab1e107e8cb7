import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long a connection that answered before its request body arrived keeps reading (and
 * discarding) that body before it is cut, at most (nginx's `lingering_time`), and how long it waits
 * for the next bytes of it (nginx's `lingering_timeout`): a client still sending is not cut while
 * its bytes keep coming (on a loaded machine a 24 MiB body took over 10 s), one that stalls is.
 */
export const LINGER_MS = 30_000;
export const LINGER_IDLE_MS = 5_000;

/**
 * Makes the connection of `req` close gently when node closes it after the answer (a 413 sent
 * before the body was read, or any `Connection: close` answer): the answer is flushed and the
 * write side half-closed (FIN), and the rest of the body is read and discarded until it is
 * complete, the client closes, no byte of it came for `idleMs`, or `lingerMs` passes; only then is the socket destroyed. Closing at
 * once, with the client's bytes unread, makes the kernel answer them with a reset (RFC 9112 §9.6),
 * which throws away the answer a client had not read yet: under load, a client sending a huge
 * body saw "connection reset" instead of 413 `payload_too_large`.
 *
 * Node's HTTP server ends such a connection through `socket.destroySoon()` once the response is
 * written; this replaces it for the request's socket (the next request on a kept-alive socket
 * installs its own). Its parser goes on discarding the body (`req._dump()`) meanwhile.
 */
export function lingerOnClose(req: IncomingMessage, lingerMs = LINGER_MS, idleMs = LINGER_IDLE_MS): void {
  const socket = req.socket as Socket & { destroySoon?: () => void };
  if (!socket || typeof socket.destroySoon !== 'function') return;
  socket.destroySoon = function lingeringClose(this: Socket) {
    const cut = () => {
      clearInterval(timer);
      socket.destroy();
    };
    const until = Date.now() + lingerMs;
    // The parser discards the body unseen (`req._dump()`), so progress is read off the socket's count.
    let bytesRead = socket.bytesRead;
    const timer = setInterval(() => {
      if (socket.bytesRead === bytesRead || Date.now() >= until) cut();
      bytesRead = socket.bytesRead;
    }, idleMs);
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
    socket.once('close', () => clearInterval(timer));
    req.resume();
  };
}
