import t from 'tap';
import { hashReceipt } from '#lib/ledger/receipt.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN } from '../../helpers/oidc.js';
import { runInProcess } from '../../helpers/cli-in-process.js';

// The areas this suite exercises (docs/platform.md#test-tiers).
const areas = ['account', 'orgs', 'receipts'] as const;
const admin = { authorization: `Bearer ${ADMIN}` };

interface Item {
  hash: string;
  receipt: { kind: string; [member: string]: unknown };
}

t.test('the audit export pages through receipts with a cursor, filters them and answers NDJSON', async (t) => {
  const { app, signIn } = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const { browser: ada, identityId: adaId } = await signIn({ username: 'ada' });
  const { browser: bob } = await signIn({ username: 'bob' });
  const made: string[] = [];
  for (const [who, name] of [
    [ada, 'Ada One'],
    [bob, 'Bob One'],
    [ada, 'Ada Two'],
  ] as const)
    made.push((await who.post('/auth/orgs/create', { name })).json().receipt as string);
  const get = (query: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url: `/admin/receipts${query}`, headers: { ...admin, ...headers } });

  t.equal((await app.inject({ method: 'GET', url: '/admin/receipts' })).statusCode, 401, 'the token is needed');
  t.equal((await ada.get('/admin/receipts')).statusCode, 401, 'an everyday session is not an operator');

  const all: Item[] = [];
  let after = '';
  let pages = 0;
  for (;;) {
    const page = (await get(`?limit=2${after}`)).json() as { receipts: Item[]; next: string | null };
    all.push(...page.receipts);
    pages++;
    if (page.next === null) break;
    after = `&after=${page.next}`;
  }
  t.ok(pages > 1, `${pages} pages`);
  const hashes = all.map((item) => item.hash);
  t.equal(new Set(hashes).size, hashes.length, 'no receipt twice');
  t.ok(
    all.every((item) => hashReceipt(item.receipt) === item.hash),
    'each item is a receipt with its hash',
  );
  t.ok(
    made.every((hash) => hashes.includes(hash)),
    'every receipt is there',
  );

  const orgs = (await get('?type=org.created')).json().receipts as Item[];
  t.same(
    orgs.map((item) => item.hash),
    made,
    'by type, in ledger order',
  );
  const adas = (await get(`?subject=${adaId}&type=org.created`)).json().receipts as Item[];
  t.same(
    adas.map((item) => item.hash),
    [made[0], made[2]],
    'by an id the receipt names',
  );
  t.same((await get(`?subject=${adaId.slice(0, -1)}`)).json().receipts, [], 'a whole id, not a prefix');
  const future = new Date(app.kp.now() + 3_600_000).toISOString();
  t.same((await get(`?since=${encodeURIComponent(future)}`)).json().receipts, []);
  t.equal((await get(`?until=${encodeURIComponent(future)}&type=org.created`)).json().receipts.length, 3);
  for (const bad of ['?since=yesterday', '?after=x', '?subject=%25', '?type=Org', '?limit=0', '?limit=5000'])
    t.equal((await get(bad)).json().reason, 'invalid_request', bad);

  const nd = await get('?type=org.created', { accept: 'application/x-ndjson' });
  t.match(nd.headers['content-type'], /^application\/x-ndjson/);
  t.same(
    nd.body
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as Item).hash),
    made,
  );

  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  const cli = await runInProcess(
    ['receipts', 'export', '--type', 'org.created', '--control-plane', `http://127.0.0.1:${address.port}`],
    { KEYPLANE_ADMIN_TOKEN: ADMIN },
  );
  t.equal(cli.code, 0, cli.stderr);
  t.same(
    cli.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as Item).hash),
    made,
    'keyplane receipts export writes NDJSON',
  );
  t.match(cli.stderr, /3 receipt\(s\) exported/);
  const refused = await runInProcess(['receipts', 'export', '--control-plane', `http://127.0.0.1:${address.port}`], {
    KEYPLANE_ADMIN_TOKEN: 'wrong-token-wrong-token-wrong-token',
  });
  t.equal(refused.code, 1, 'a refused token is exit 1');
  t.equal((await runInProcess(['receipts', 'export', '--since', 'soon', '--control-plane', 'http://x'])).code, 2);
});
