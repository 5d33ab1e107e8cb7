import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';

t.test("docs/scim.md's curl commands run as written against a live server", async (t) => {
  const built = await buildSignedIn(t, { areas: ['orgs', 'scim'] });
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const { token } = (await owner.browser.post('/org/acme/scim-tokens')).json() as { token: string };
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  const blocks = codeBlocksUnder('docs/scim.md', 'Try it with curl');
  t.equal(blocks.length, 3);
  const env = { ...process.env, ISSUER: address, ORG: 'acme', SCIM_TOKEN: token };
  // Run beside the server, which answers from this process: never a synchronous spawn.
  const outputs: string[] = [];
  for (const block of blocks) {
    t.equal(block.lang, 'bash');
    const run = await promisify(execFile)('bash', ['-e', '-o', 'pipefail', '-c', block.text], { env, timeout: 30_000 });
    outputs.push(run.stdout);
  }
  t.match(JSON.parse(outputs[0]!), { patch: { supported: true } });
  // The look-up answers one user; the PATCH answers it suspended.
  t.match(outputs[1], /"totalResults":1/);
  t.match(outputs[1], /"active":false/);
  // The conditional read answers 304; the write at that version reactivates the user.
  t.match(outputs[2], /^304\n/);
  t.match(outputs[2], /"active":true/);
  const users = await built.services.storage.scim.users((await built.services.storage.orgs.getBySlug('acme'))!.orgId);
  t.equal(await built.services.storage.identities.state(users[0]!.identityId), 'active');
});
