import t from 'tap';
import { request } from 'undici';
import { startTestGateway, startUpstream } from './helpers.js';

/** The proxy hop's flow control: what a slow, a departing or a cut-off peer does to a response in flight. */
const OPEN = { mode: 'enforce' as const, routes: [{ path: '/', min_assurance: 'email' as const }] };

t.test(
  'a slow client gets the whole body; a client that leaves ends the upstream request; a reset after the head cuts the client',
  async (t) => {
    const big = Buffer.alloc(4 * 1024 * 1024, 'k');
    // A body far larger than the socket buffers of both hops, written as fast as the gateway takes it.
    const huge = { total: 256 * 1024 * 1024, written: 0 };
    const chunk = Buffer.alloc(64 * 1024, 'h');
    let upstreamClosed: () => void = () => {};
    const upstreamGone = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const upstream = await startUpstream(t, (req, res) => {
      if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(big.length) });
        res.end(big);
        return true;
      }
      if (req.url === '/huge') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(huge.total) });
        const pump = () => {
          while (huge.written < huge.total) {
            huge.written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
        return true;
      }
      if (req.url === '/forever') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
        res.on('close', () => upstreamClosed());
        return true;
      }
      if (req.url === '/reset') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
        res.write('partial');
        setTimeout(() => res.socket?.destroy(), 20);
        return true;
      }
      return false;
    });
    const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
    const cookie = await gw.sessionCookie();

    // Read slowly: the gateway must pause the upstream rather than buffer or drop.
    const res = await request(`${gw.url}/big`, { headers: { cookie } });
    let received = 0;
    for await (const chunk of res.body) {
      received += (chunk as Buffer).length;
      if (received < 1024 * 1024) await new Promise((resolve) => setTimeout(resolve, 2));
    }
    t.equal(received, big.length, 'every byte arrives');

    // A client that reads nothing: the upstream must be held back, not drained into the gateway's memory.
    const stalled = await request(`${gw.url}/huge`, { headers: { cookie } });
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.ok(
      huge.written < 64 * 1024 * 1024,
      `the upstream was paused after ${huge.written} of ${huge.total} bytes while the client read nothing`,
    );
    stalled.body.destroy();

    const stream = await request(`${gw.url}/forever`, { headers: { cookie } });
    for await (const chunk of stream.body) {
      t.equal(String(chunk), 'data: first\n\n');
      break; // leaving the loop destroys the body: the client goes away
    }
    await upstreamGone;
    t.pass('the upstream request ended when the client left');

    const cut = await request(`${gw.url}/reset`, { headers: { cookie } });
    t.equal(cut.statusCode, 200, 'the head had gone out already');
    await t.rejects(cut.body.text(), 'the client sees the connection cut, not a clean end');
    const metrics = await (await request(`${gw.url}/metrics`)).body.text();
    t.match(
      metrics,
      /kp_gate_upstream_failures_total\{reason="upstream_unavailable"\} 1/,
      'the reset is an upstream failure',
    );
    t.match(metrics, /kp_gate_requests_total\{outcome="allowed"\} 3/, 'the clients leaving are not');
  },
);
