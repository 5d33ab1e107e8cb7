import t from 'tap';
import type { Test } from 'tap';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { lingerOnClose } from '#lib/runtime/linger-close.js';

/** A server that answers 413 with `Connection: close` before reading a body, lingering 3 s at most, 600 ms idle. */
async function refusingServer(t: Test): Promise<Server> {
  const server = createServer((req, res) => {
    lingerOnClose(req, 3_000, 600);
    res.writeHead(413, { connection: 'close', 'content-type': 'text/plain' }).end('too large');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return server;
}

function opened(server: Server): Socket {
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n');
  return socket;
}

/** Writes 16 KiB every `everyMs` for `forMs`, unless the socket ends first; the answer is read only then. */
async function trickle(socket: Socket, everyMs: number, forMs: number): Promise<{ answer: string; cut: boolean }> {
  let answer = '';
  let cut = false;
  socket.on('error', () => (cut = true));
  socket.pause();
  for (const started = Date.now(); Date.now() - started < forMs && !socket.destroyed; await sleep(everyMs))
    socket.write(Buffer.alloc(16 * 1024, 'a'));
  socket.on('data', (data: Buffer) => (answer += data.toString('utf8')));
  socket.resume();
  if (!socket.closed) await once(socket, 'close');
  return { answer, cut };
}

t.test('a client still sending its body past the idle window is read to the end, then answered', async (t) => {
  const server = await refusingServer(t);
  const { answer } = await trickle(opened(server), 50, 1_500);
  t.match(answer, /^HTTP\/1\.1 413 /, 'the answer survived 1.5 s of sending, past two idle windows');
});

t.test('a client that stops sending is cut after the idle window, one that never stops after the cap', async (t) => {
  const server = await refusingServer(t);
  // When the server's side of the next connection closes, counted from its start.
  const nextClosed = () =>
    new Promise<number>((resolve) =>
      server.once('connection', (socket: Socket) => {
        const started = Date.now();
        socket.once('close', () => resolve(Date.now() - started));
      }),
    );
  const stalledClosed = nextClosed();
  // Headers only, then nothing (half-open, so the server's FIN does not end it).
  const stalled = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
  stalled.on('error', () => undefined);
  stalled.pause();
  stalled.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n');
  const idle = await stalledClosed;
  t.ok(idle >= 600 && idle < 2_900, `cut after ${idle} ms without a byte`);
  stalled.destroy();
  const endlessClosed = nextClosed();
  await trickle(opened(server), 50, 8_000);
  const sending = await endlessClosed;
  t.ok(sending >= 2_900 && sending < 7_900, `cut after ${sending} ms of sending, the 3 s cap`);
});
