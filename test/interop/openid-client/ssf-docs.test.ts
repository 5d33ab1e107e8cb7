import t from 'tap';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';
import { ADMIN, start } from '../../helpers/openid-client.js';

/**
 * docs/events.md#shared-signals-streams-from-a-receivers-view as a receiver reads it: its shell
 * commands run as written (bash, curl, jq) against a live control plane, and its jose snippet
 * verifies the SET they polled.
 */
const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

t.test("docs/events.md: a receiver's commands and its SET check run as written", async (t) => {
  const server = await start(t);
  const blocks = codeBlocksUnder('docs/events.md', "Shared Signals streams, from a receiver's view");
  const script = blocks
    .filter((b) => b.lang === 'sh')
    .map((b) => b.text)
    .join('\n');
  const env = { ...process.env, ISSUER: server.url, KEYPLANE_ADMIN_TOKEN: ADMIN };
  const { stdout } = await promisify(execFile)(
    'bash',
    ['-euo', 'pipefail', '-c', `${script}\necho "$SETS"\necho "$CLIENT_ID"`],
    {
      env,
    },
  );
  const lines = stdout.trim().split('\n');
  t.same(lines.slice(0, 6), [
    '{"spec_version":"1_0","delivery_methods_supported":["urn:ietf:rfc:8935","urn:ietf:rfc:8936"]}',
    lines[1]!,
    '200',
    '204',
    '{"count":1,"moreAvailable":false}',
    '{"sets":{},"moreAvailable":false}',
  ]);
  t.match(JSON.parse(lines[1]!), { status: 'enabled', stream_id: /^sst_/ });
  const set = Object.values((JSON.parse(lines[6]!) as { sets: Record<string, string> }).sets)[0]!;
  const [check] = blocks.filter((b) => b.lang === 'js');
  const file = join(fileURLToPath(new URL('.', import.meta.url)), `.doc-ssf-${process.pid}.mjs`);
  writeFileSync(file, check!.text);
  t.teardown(() => rmSync(file, { force: true }));
  process.env['ISSUER'] = server.url;
  process.env['CLIENT_ID'] = lines[7]!;
  const { verifySet } = (await import(file)) as { verifySet: (set: string) => Promise<Record<string, any>> };
  t.match(await verifySet(set), { events: { [VERIFICATION]: { state: 'check-1' } } });
  await t.rejects(verifySet(set.slice(0, -4) + 'AAAA'));
});
