import t from 'tap';
import { createServer } from 'node:http';
import { defaultPublicUrl, findFreePort, listen, waitForPort } from '#lib/runtime/listen.js';

t.test('loopback hosts become localhost; others keep their address', async (t) => {
  t.equal(defaultPublicUrl('127.0.0.1', 4400), 'http://localhost:4400');
  t.equal(defaultPublicUrl('127.8.9.10', 1), 'http://localhost:1');
  t.equal(defaultPublicUrl('::1', 4480), 'http://localhost:4480');
  t.equal(defaultPublicUrl('localhost', 80), 'http://localhost:80');
  t.equal(defaultPublicUrl('10.0.0.5', 4400), 'http://10.0.0.5:4400');
  t.equal(defaultPublicUrl('fd00::5', 4400), 'http://[fd00::5]:4400');
});

t.test('listen reports the port it got, and a taken port rejects', async (t) => {
  const first = createServer();
  const port = await listen(first, 0, '127.0.0.1');
  t.ok(port > 0);
  const second = createServer();
  await t.rejects(listen(second, port, '127.0.0.1'), { code: 'EADDRINUSE' });
  await new Promise((resolve) => first.close(resolve));
});

t.test('findFreePort gives a port that can then be bound', async (t) => {
  const port = await findFreePort();
  t.ok(port > 0);
  const server = createServer();
  t.equal(await listen(server, port, '127.0.0.1'), port);
  await new Promise((resolve) => server.close(resolve));
});

t.test('waitForPort resolves once something listens, and rejects when nothing does', async (t) => {
  const port = await findFreePort();
  const waiting = waitForPort(port, '127.0.0.1', 10_000);
  const server = createServer();
  await listen(server, port, '127.0.0.1');
  await waiting;
  await new Promise((resolve) => server.close(resolve));
  await t.rejects(
    waitForPort(port, '127.0.0.1', 200),
    /nothing accepted connections on 127\.0\.0\.1:\d+ within 200 ms/,
  );
});
