import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build, tempDir } from '../helpers/build.js';
import { runInProcess } from '../helpers/cli-in-process.js';

const ADMIN = 'rollout-status-admin-token-0123456789abcdef0123';

t.test(
  'rollout status --project of an unknown project exits 1 not_found and names the projects there are',
  async (t) => {
    const { app } = await build(t, { config: { adminToken: ADMIN } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const cp = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const env = { KEYPLANE_ADMIN_TOKEN: ADMIN };
    const status = (...args: string[]) => runInProcess(['rollout', 'status', ...args, '--control-plane', cp], env);

    const none = await status('--project', 'nope');
    t.equal(none.code, 1, 'even with no project at all');
    t.match(none.stderr, /rollout status: not_found \(no project named nope; no project has a trust profile yet\)/);

    const file = join(tempDir(t), 'shop.yaml');
    writeFileSync(
      file,
      `contract: project-trust-profile/v1
project: shop
exposure: public
principals: {humans: true, agents: false}
environments:
  - {name: local, redirect_uris: ['http://localhost:8080/_gate/callback'], resources: []}
data_class: confidential
required_assurance: passkey
`,
    );
    const classified = await runInProcess(['rollout', 'classify', file, '--control-plane', cp], env);
    t.equal(classified.code, 0, classified.stderr);

    const unknown = await status('--project', 'nope');
    t.equal(unknown.code, 1);
    t.equal(unknown.stdout, '', 'no table and no "no project has a trust profile yet" while shop has one');
    t.match(unknown.stderr, /rollout status: not_found \(no project named nope; the projects are shop\)/);
    const json = await status('--project', 'nope', '--json');
    t.equal(json.code, 1);
    t.match(JSON.parse(json.stdout), { ok: false, reason: 'not_found' });

    const known = await status('--project', 'shop');
    t.equal(known.code, 0, known.stderr);
    t.match(known.stdout, /^shop\s+/m);
  },
);
