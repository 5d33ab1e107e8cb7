import { Writable } from 'node:stream';
import Fastify from 'fastify';
import t from 'tap';
import { AccessLog, loggerOptions, requestLogger } from '../../../control-plane/src/logging.js';

/** A fastify with the control plane's logging; `fast` writes the access line itself (as app.ts does). */
async function server(t: { teardown(fn: () => unknown): void }, fast: boolean) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const accessLog = new AccessLog();
  const app = Fastify({
    logger: loggerOptions('info', stream),
    logController: accessLog,
    childLoggerFactory: requestLogger,
    trustProxy: true,
  });
  if (fast) accessLog.writeTo(app.log);
  app.get('/thing', async (request) => {
    if ((request.query as { log?: string }).log) request.log.warn({ grant: { token: 'SECRET' } }, 'said by the route');
    return { ok: true };
  });
  app.get('/boom', { logLevel: 'warn' }, async () => {
    throw new Error('boom');
  });
  t.teardown(() => app.close());
  return { app, lines };
}

/** A line with its per-request values (time, id, duration) set to fixed ones. */
const normalized = (line: string) =>
  line
    .replace(/"time":\d+/, '"time":0')
    .replace(/"reqId":"[^"]+"/, '"reqId":"r"')
    .replace(/"responseTime":[0-9.e-]+/, '"responseTime":0');

t.test('the access line written directly is the line pino writes, byte for byte', async (t) => {
  const direct = await server(t, true);
  const throughPino = await server(t, false);
  const request = {
    method: 'GET' as const,
    url: '/thing?code=SECRET&keep=ä%22x',
    remoteAddress: '192.0.2.7',
    headers: { 'x-forwarded-for': '198.51.100.4' },
  };
  await direct.app.inject(request);
  await throughPino.app.inject(request);
  t.equal(direct.lines.length, 1, 'one line per request');
  t.equal(normalized(direct.lines[0]!), normalized(throughPino.lines[0]!));
  const line = JSON.parse(direct.lines[0]!) as Record<string, unknown>;
  t.same(line['req'], { method: 'GET', url: '/thing?code=[redacted]&keep=%C3%A4%22x', remoteAddress: '198.51.100.4' });
  t.same(line['res'], { statusCode: 200 });
  t.equal(line['msg'], 'request completed');
  t.type(line['pid'], 'number', "pino's bindings are on the line");

  // Without X-Forwarded-For the address is the socket's; a method of its own is written the same way.
  const direct2 = { method: 'HEAD' as const, url: '/thing', remoteAddress: '192.0.2.9' };
  await direct.app.inject(direct2);
  await throughPino.app.inject(direct2);
  t.equal(normalized(direct.lines[1]!), normalized(throughPino.lines[1]!));
  t.same((JSON.parse(direct.lines[1]!) as { req: unknown }).req, {
    method: 'HEAD',
    url: '/thing',
    remoteAddress: '192.0.2.9',
  });
});

t.test("a request's own logger is made when used, redacts, and keeps the route's level", async (t) => {
  const { app, lines } = await server(t, true);
  await app.inject({ method: 'GET', url: '/thing?log=1' });
  const [said, completed] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  t.equal(said!['msg'], 'said by the route');
  t.same(said!['grant'], { token: '[redacted]' }, 'redaction applies to what the route logs');
  t.equal(said!['reqId'], completed!['reqId'], "the route's line carries the request id");
  lines.length = 0;
  const failed = await app.inject({ method: 'GET', url: '/boom' });
  t.equal(failed.statusCode, 500);
  const errored = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  t.same(
    errored.map((line) => line['msg']),
    ['boom'],
    'the error is logged through pino; the route logs at warn, so no info line (the access line) is written',
  );
  t.equal(errored[0]!['level'], 50);
  t.ok(errored[0]!['err'], 'with the error');
});
