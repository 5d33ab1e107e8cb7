import t from 'tap';
import { ADMIN, registerClient } from '../../helpers/oidc.js';
import { build } from '../../helpers/build.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['clients', 'oidc', 'admin'] as const;

t.test('GET /admin/clients pages through the clients by id, without secrets, for the admin token only', async (t) => {
  const { app } = await build(t, { areas, config: { adminToken: ADMIN } });
  const registered = [];
  for (const name of ['One', 'Two', 'Three'])
    registered.push((await registerClient(app, { client_name: name })).client_id);
  const ids = [...registered].sort();
  const list = (query: string, token = ADMIN) =>
    app.inject({ method: 'GET', url: `/admin/clients${query}`, headers: { authorization: `Bearer ${token}` } });

  const first = await list('?limit=2');
  t.equal(first.statusCode, 200);
  t.same(
    first.json().clients.map((c: { client_id: string }) => c.client_id),
    ids.slice(0, 2),
  );
  t.equal(first.json().next, ids[1], 'a full page names where the next one starts');
  t.notMatch(first.body, /client_secret"|secret_hash/, 'no secret or its hash');

  const rest = await list(`?limit=2&after=${encodeURIComponent(first.json().next)}`);
  t.same(
    rest.json().clients.map((c: { client_id: string }) => c.client_id),
    ids.slice(2),
  );
  t.equal(rest.json().next, null, 'a short page is the last');
  t.same((await list('')).json().clients.length, 3, '100 by default');

  t.match((await list('?limit=0')).json(), { ok: false, reason: 'invalid_request' });
  t.match((await list('?limit=501')).json(), { ok: false, reason: 'invalid_request' });
  const wrong = await list('', 'not-the-admin-token-0000000000000000');
  t.equal(wrong.statusCode, 401);
  t.equal(wrong.json().ok, false);
});
