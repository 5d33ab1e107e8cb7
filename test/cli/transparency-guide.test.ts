import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { symlinkSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseCheckpoint, parseNote, parseVerifierKey } from '#lib/ledger/transparency/index.js';
import { tempDir } from '../helpers/build.js';
import { CLI, childEnv } from '../helpers/cli.js';
import { codeBlocksUnder } from '../helpers/doc-blocks.js';
import { startLiveControlPlane } from '../helpers/live-browser.js';

/**
 * docs/ledger.md "Verifying with transparency tools" as its readers run it: the section's own shell
 * blocks, `keyplane` being this checkout's CLI, against a real control plane with sealed receipts.
 */
const blocks = codeBlocksUnder('docs/ledger.md', 'Verifying with transparency tools').filter((b) => b.lang === 'sh');
const [curlBlock, verifyBlock] = blocks;
const PYTHON = ['python3', '/usr/bin/python3'].find(
  (python) => spawnSync(python, ['-c', 'import cryptography'], { encoding: 'utf8' }).status === 0,
);
const required = process.env['KEYPLANE_REQUIRE_ALL'] === '1';
if (!PYTHON && required) t.fail('python3 with the cryptography package is required (KEYPLANE_REQUIRE_ALL=1)');

t.test(
  'the transparency guide runs as written',
  { timeout: 180_000, skip: PYTHON || required ? false : 'python3 with cryptography is missing' },
  async (t) => {
    t.equal(blocks.length, 2, 'two shell blocks');
    const server = await startLiveControlPlane(t, { 'ledger.sealIntervalMs': 60_000 });
    const issuer = server.url;
    const { services } = server;
    let receipt = '';
    for (let i = 0; i < 3; i++) {
      const recorded = await services.storage.transaction((tx) =>
        services.events.record(tx, {
          type: 'keys.rotated',
          at: services.now(),
          outcome: 'success',
          kid: `k-${randomBytes(4).toString('hex')}`,
          retired: null,
        }),
      );
      receipt = recorded.receipt!;
    }
    await services.ledger.sealNow();

    const dir = tempDir(t, 'keyplane-transparency-guide-');
    // The reader's checkout: the CLI's dependencies and the Python verifier the guide names.
    symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'));
    symlinkSync(join(process.cwd(), 'test'), join(dir, 'test'));
    const cli = CLI.map((arg) => (arg.endsWith('.ts') || arg.endsWith('.js') ? join(process.cwd(), arg) : arg));
    t.ok(cli.every((arg) => !arg.includes('/') || isAbsolute(arg)));
    const preamble = `keyplane() { "${process.execPath}" ${cli.map((arg) => `'${arg}'`).join(' ')} "$@"; }\n`;
    const shell = async (script: string) => {
      const child = spawn('sh', ['-ec', preamble + script.replaceAll('http://localhost:4400', issuer)], {
        cwd: dir,
        env: childEnv({ RECEIPT: receipt }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const [code] = await once(child, 'exit');
      return { code: code as number | null, stdout, stderr };
    };

    const curl = await shell(curlBlock!.text);
    t.equal(curl.code, 0, curl.stderr);
    const lines = curl.stdout.trimEnd().split('\n');
    const note = parseNote(lines.slice(0, -2).join('\n') + '\n');
    t.equal(parseCheckpoint(note.text).size, 3, 'the signed note');
    t.equal(parseVerifierKey(lines.at(-2)!).name, `${new URL(issuer).host}/keyplane/ledger`, 'its key');
    t.equal(lines.at(-1)!.trim(), '32', 'one leaf hash in the first tile');

    const verified = await shell(verifyBlock!.text.replace(/^python3 /m, `${PYTHON} `));
    t.equal(verified.code, 0, verified.stderr);
    t.match(verified.stdout, /^verified: receipt [0-9a-f]{64} .*transparency log: leaf \d+ of 3/m);
    t.match(verified.stdout, /^ok$/m, 'the Python verifier agrees');
  },
);
