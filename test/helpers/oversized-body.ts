import { once } from 'node:events';
import { connect } from 'node:net';

/**
 * Sends one request with a body far larger than the server takes, on a raw socket, the way many
 * HTTP clients do: the whole body first (as far as the server lets it), then the answer is read.
 * Answers the status line and body read, or `reset` when the connection was reset before any
 * answer could be read (what a client saw before servers lingered on close).
 */
export async function sendOversizedBody(
  url: string,
  input: { method?: string; path: string; contentType: string; bytes: number; chunked?: boolean; headers?: string },
): Promise<{ status: number; body: string } | { reset: string }> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  await once(socket, 'connect');
  let failure = '';
  socket.on('error', (error: NodeJS.ErrnoException) => (failure ||= error.code ?? error.message));
  const framing = input.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${input.bytes}`;
  socket.write(
    `${input.method ?? 'POST'} ${input.path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${input.contentType}\r\n${input.headers ?? ''}${framing}\r\n\r\n`,
  );
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const framed = input.chunked
    ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
    : chunk;
  for (let sent = 0; sent < input.bytes && !socket.destroyed && socket.writable; sent += chunk.length)
    if (!socket.write(framed))
      await Promise.race([once(socket, 'drain'), once(socket, 'close')]).catch(() => undefined);
  if (!socket.destroyed && socket.writable) socket.end(input.chunked ? '0\r\n\r\n' : '');
  // Only now is the answer read.
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (data: string) => (text += data));
  if (!socket.closed) await once(socket, 'close').catch(() => undefined);
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1];
  if (!status) return { reset: failure || 'closed without an answer' };
  return { status: Number(status), body: text.slice(text.indexOf('\r\n\r\n') + 4) };
}
