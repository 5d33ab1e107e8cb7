import t from 'tap';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';
import {
  checkFetchTarget,
  createGuardedFetcher,
  fetchGuarded,
  isFetchRefusal,
  type GuardedFetchOptions,
} from '#lib/fetch/guarded-fetch.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';

// Private targets are switched on here only, to reach the local test server; the refusals
// with the default options are in refusals.test.ts.
const tls = makeTestCa(t, ['keys.test']);

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return isKeyplaneError(error) ? error.reason : `not a KeyplaneError: ${String(error)}`;
  }
  return 'no refusal';
}

t.test('fetches a JSON document over https from a server with a trusted private CA', async (t) => {
  const server = await startHttpsServer(t, tls, (req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        keys: [],
        ua: req.headers['user-agent'],
        cookie: req.headers.cookie ?? null,
        auth: req.headers.authorization ?? null,
      }),
    );
  });
  const fetched = await fetchGuarded(`${server.origin}/jwks?probe=1`, { allowPrivateTargets: true, ca: tls.ca });
  t.equal(fetched.status, 200);
  t.equal(fetched.url, `${server.origin}/jwks?probe=1`);
  t.equal(fetched.address, '127.0.0.1');
  t.same(JSON.parse(fetched.body.toString('utf8')), { keys: [], ua: 'keyplane-fetch/1', cookie: null, auth: null });
  t.same(fetched.redirects, []);
});

t.test('connects to the checked address and verifies TLS for the host name', async (t) => {
  let hostHeader: string | undefined;
  let servername: string | undefined;
  const server = await startHttpsServer(t, tls, (req, res) => {
    hostHeader = req.headers.host;
    servername = (req.socket as { servername?: string }).servername;
    res.end('ok');
  });
  let lookups = 0;
  const resolver = async () => {
    lookups += 1;
    return [{ address: '127.0.0.1', family: 4 as const }];
  };
  const fetched = await fetchGuarded(`https://keys.test:${server.port}/`, {
    allowPrivateTargets: true,
    ca: tls.ca,
    resolver,
  });
  t.equal(fetched.body.toString(), 'ok');
  t.equal(lookups, 1, 'the host is resolved once');
  t.equal(hostHeader, `keys.test:${server.port}`);
  t.equal(servername, 'keys.test');
});

t.test('refuses a certificate that does not chain to a trusted CA', async (t) => {
  const server = await startHttpsServer(t, tls, (_req, res) => res.end('ok'));
  t.equal(await refusal(fetchGuarded(server.origin, { allowPrivateTargets: true })), 'fetch_failed');
  t.same(server.requests, []);
});

t.test('refuses a certificate for another host name even at the right address', async (t) => {
  const server = await startHttpsServer(t, tls, (_req, res) => res.end('ok'));
  const resolver = async () => [{ address: '127.0.0.1', family: 4 as const }];
  t.equal(
    await refusal(
      fetchGuarded(`https://other.test:${server.port}/`, { allowPrivateTargets: true, ca: tls.ca, resolver }),
    ),
    'fetch_failed',
  );
});

t.test('follows redirects, checking each target, and reports the chain', async (t) => {
  const server = await startHttpsServer(t, tls, (req, res) => {
    if (req.url === '/a') res.writeHead(302, { location: '/b' }).end();
    else if (req.url === '/b')
      res.writeHead(301, { location: `${'https://localhost:'}${req.socket.localPort}/c#frag` }).end();
    else res.end('done');
  });
  const fetched = await fetchGuarded(`${server.origin}/a`, { allowPrivateTargets: true, ca: tls.ca });
  t.equal(fetched.body.toString(), 'done');
  t.equal(fetched.url, `${server.origin}/c`);
  t.same(
    fetched.redirects.map((hop) => [hop.url, hop.status]),
    [
      [`${server.origin}/a`, 302],
      [`${server.origin}/b`, 301],
    ],
  );
  t.same(server.requests, ['GET /a', 'GET /b', 'GET /c']);
});

t.test("sends a destination's own Authorization value to it alone, never on through a redirect", async (t) => {
  const seen: Array<[string | undefined, string | undefined]> = [];
  const server = await startHttpsServer(t, tls, (req, res) => {
    seen.push([req.url, req.headers.authorization]);
    if (req.url === '/a') res.writeHead(302, { location: '/b' }).end();
    else res.end('done');
  });
  const options = { allowPrivateTargets: true, ca: tls.ca, destinationAuthorization: 'Bearer rx-own' };
  await fetchGuarded(`${server.origin}/a`, { ...options, headers: { authorization: 'Bearer smuggled' } });
  t.same(seen, [
    ['/a', 'Bearer rx-own'],
    ['/b', undefined],
  ]);
});

t.test('returns a 3xx without a Location as the answer', async (t) => {
  const server = await startHttpsServer(t, tls, (_req, res) => res.writeHead(304).end());
  const fetched = await fetchGuarded(server.origin, { allowPrivateTargets: true, ca: tls.ca });
  t.equal(fetched.status, 304);
});

t.test('refuses redirect loops and long redirect chains', async (t) => {
  const server = await startHttpsServer(t, tls, (req, res) => {
    const n = Number(req.url!.slice(1));
    if (req.url === '/loop') res.writeHead(302, { location: '/loop2' }).end();
    else if (req.url === '/loop2') res.writeHead(307, { location: '/loop' }).end();
    else res.writeHead(302, { location: `/${n + 1}` }).end();
  });
  const options: GuardedFetchOptions = { allowPrivateTargets: true, ca: tls.ca };
  t.equal(await refusal(fetchGuarded(`${server.origin}/loop`, options)), 'fetch_too_many_redirects');
  t.same(server.requests, ['GET /loop', 'GET /loop2']);
  server.requests.length = 0;
  t.equal(
    await refusal(fetchGuarded(`${server.origin}/0`, { ...options, maxRedirects: 2 })),
    'fetch_too_many_redirects',
  );
  t.same(server.requests, ['GET /0', 'GET /1', 'GET /2'], 'stops after the allowed redirects');
});

t.test('refuses a redirect to plain http, to a URL with credentials and to a malformed URL', async (t) => {
  const server = await startHttpsServer(t, tls, (req, res) => {
    const targets: Record<string, string> = {
      '/http': 'http://localhost/',
      '/creds': 'https://user:pw@localhost/',
      '/bad': 'https://[oops/',
    };
    res.writeHead(302, { location: targets[req.url!]! }).end();
  });
  const options: GuardedFetchOptions = { allowPrivateTargets: true, ca: tls.ca };
  t.equal(await refusal(fetchGuarded(`${server.origin}/http`, options)), 'fetch_not_https');
  t.equal(await refusal(fetchGuarded(`${server.origin}/creds`, options)), 'fetch_credentials_in_url');
  t.equal(await refusal(fetchGuarded(`${server.origin}/bad`, options)), 'fetch_failed');
});

t.test('binds the configured CA file and private-target switch once', async (t) => {
  const server = await startHttpsServer(t, tls, (_req, res) => res.end('bound'));
  const fetcher = createGuardedFetcher({ allowPrivateTargets: true, caFile: tls.caFile });
  t.equal((await fetcher.fetch(server.origin)).body.toString(), 'bound');
  t.equal((await fetcher.check(server.origin)).address.address, '127.0.0.1');
  const strict = createGuardedFetcher({ caFile: tls.caFile });
  t.equal(await refusal(strict.fetch(server.origin)), 'fetch_private_address');
  t.equal(await refusal(strict.check(server.origin)), 'fetch_private_address');
  t.equal(
    await refusal(fetchGuarded(server.origin, { caFile: tls.caFile, allowPrivateTargets: true, accept: 'text/plain' })),
    'no refusal',
  );
});

t.test('lets exactly the listed private addresses through', async (t) => {
  const server = await startHttpsServer(t, tls, (_req, res) => res.end('listed'));
  const fetched = await fetchGuarded(server.origin, { ca: tls.ca, allowAddresses: ['127.0.0.1'] });
  t.equal(fetched.body.toString(), 'listed');
  t.equal(
    await refusal(fetchGuarded(`https://[::1]:${server.port}/`, { ca: tls.ca, allowAddresses: ['127.0.0.1'] })),
    'fetch_private_address',
  );
});

t.test('an unresolvable host is refused with its own reason', async (t) => {
  t.equal(await refusal(fetchGuarded('https://nothing.test/', { resolver: async () => [] })), 'fetch_unresolvable');
  t.equal(
    await refusal(
      fetchGuarded('https://nothing.test/', {
        resolver: async () => {
          throw new Error('ENOTFOUND');
        },
      }),
    ),
    'fetch_unresolvable',
  );
  t.equal(await refusal(checkFetchTarget('https://nothing.invalid/')), 'fetch_unresolvable');
});

t.test('a refusal is recognisable as one', async (t) => {
  const error = await fetchGuarded('http://example.com/').catch((caught: unknown) => caught);
  t.ok(isFetchRefusal(error));
  t.notOk(isFetchRefusal(new Error('x')));
});

t.test('POSTs a form body with its length and type, never through a redirect', async (t) => {
  const seen: Array<{ method?: string; type?: string; length?: string; body: string }> = [];
  const server = await startHttpsServer(t, tls, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({
        method: req.method,
        type: req.headers['content-type'],
        length: req.headers['content-length'],
        body,
      });
      if (req.url === '/moved') {
        res.statusCode = 307;
        res.setHeader('location', '/logout');
      }
      res.end();
    });
  });
  const options: GuardedFetchOptions = {
    allowPrivateTargets: true,
    ca: tls.ca,
    method: 'POST',
    body: 'logout_token=a.b.c',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: 'never' },
  };
  const posted = await fetchGuarded(`${server.origin}/logout`, options);
  t.equal(posted.status, 200);
  t.same(seen, [
    { method: 'POST', type: 'application/x-www-form-urlencoded', length: '18', body: 'logout_token=a.b.c' },
  ]);
  t.equal(await refusal(fetchGuarded(`${server.origin}/moved`, options)), 'fetch_failed', 'the body is not re-sent');
  t.equal(seen.length, 2, 'only the first target got it');
  const unfollowed = await fetchGuarded(`${server.origin}/moved`, { ...options, followRedirects: false });
  t.equal(unfollowed.status, 307, 'or the redirect is the answer');
  t.equal(seen.length, 3);
});
