import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ADMIN } from '../helpers/oidc.js';
import { build, tempDir } from '../helpers/build.js';
import { runCli } from '../helpers/cli.js';
import { runInProcess } from '../helpers/cli-in-process.js';

t.setTimeout(300_000);

const { app } = await build(t, { config: { adminToken: ADMIN } });
await app.listen({ port: 0, host: '127.0.0.1' });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const env = { KEYPLANE_ADMIN_TOKEN: ADMIN };

t.test('keyplane apis add, list, show and remove', async (t) => {
  const added = await runCli(
    [
      'apis',
      'add',
      '--resource',
      'https://notes.example.com',
      '--name',
      'Notes',
      '--scope',
      'notes.read=Read your notes',
      '--scope',
      'notes.write=Change your notes',
      '--control-plane',
      url,
    ],
    env,
  );
  t.equal(added.code, 0, added.stderr);
  t.match(added.stdout, /^api_[A-Za-z0-9_-]+\n$/, 'only the id on stdout');
  const apiId = added.stdout.trim();
  t.match(added.stderr, /declared .* "Notes" \(notes\.read notes\.write\), receipt [0-9a-f]{64}/);

  const file = join(tempDir(t), 'api.json');
  await writeFile(
    file,
    JSON.stringify({
      resource: 'https://ledger.example.com',
      name: 'Ledger',
      scopes: [{ name: 'ledger.read', description: { en: 'Read the ledger', de: 'Das Hauptbuch lesen' } }],
      allowed_orgs: [],
    }),
  );
  const fromFile = await runInProcess(['apis', 'add', '--file', file, '--control-plane', url, '--json'], env);
  t.equal(fromFile.code, 0, fromFile.stderr);
  t.match(JSON.parse(fromFile.stdout), { ok: true, resource: 'https://ledger.example.com' });

  const list = await runInProcess(['apis', 'list', '--control-plane', url], env);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, `${apiId} https://notes.example.com "Notes" (notes.read notes.write)`);
  t.match(list.stdout, 'https://ledger.example.com "Ledger" (ledger.read)');

  const show = await runInProcess(['apis', 'show', apiId, '--control-plane', url], env);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, 'scope notes.read: Read your notes');
  t.match(show.stdout, "admits: the owner's own clients");

  const reserved = await runCli(
    [
      'apis',
      'add',
      '--resource',
      'https://x.example.com',
      '--name',
      'X',
      '--scope',
      'openid=x',
      '--control-plane',
      url,
      '--json',
    ],
    env,
  );
  t.equal(reserved.code, 1, 'a refusal exits 1');
  t.match(JSON.parse(reserved.stdout), { ok: false, reason: 'invalid_scope' });

  const usage = await runInProcess(['apis', 'add', '--name', 'X', '--control-plane', url], env);
  t.equal(usage.code, 2, 'missing flags are a usage error');

  const removed = await runInProcess(['apis', 'remove', apiId, '--control-plane', url], env);
  t.equal(removed.code, 0, removed.stderr);
  t.match(removed.stdout, new RegExp(`removed ${apiId}, receipt [0-9a-f]{64}`));
  const gone = await runInProcess(['apis', 'show', apiId, '--control-plane', url, '--json'], env);
  t.equal(gone.code, 1);
  t.match(JSON.parse(gone.stdout), { ok: false, reason: 'not_found' });
});
