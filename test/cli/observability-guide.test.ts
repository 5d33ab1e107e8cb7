import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { isAbsolute, join } from 'node:path';
import { tempDir } from '../helpers/build.js';
import { CLI, childEnv } from '../helpers/cli.js';
import { codeBlocksUnder } from '../helpers/doc-blocks.js';
import { freePort } from '../helpers/free-port.js';

/**
 * docs/observability.md "Try it" as its readers run it: the section's shell block, `keyplane`
 * being this checkout's CLI, on free ports instead of 4400 and 4318.
 */
const [script] = codeBlocksUnder('docs/observability.md', 'Try it').filter((b) => b.lang === 'sh');

t.test(
  'the observability guide runs as written: one request, its metric, its log line and its span',
  { timeout: 120_000 },
  async (t) => {
    t.ok(script, 'the section has a shell block');
    const [controlPlane, receiver] = [await freePort(), await freePort()];
    const cli = CLI.map((arg) => (arg.endsWith('.ts') || arg.endsWith('.js') ? join(process.cwd(), arg) : arg));
    t.ok(cli.every((arg) => !arg.includes('/') || isAbsolute(arg)));
    const preamble = `keyplane() { "${process.execPath}" ${cli.map((arg) => `'${arg}'`).join(' ')} "$@"; }\n`;
    const child = spawn(
      'sh',
      ['-ec', preamble + script!.text.replaceAll('4400', String(controlPlane)).replaceAll('4318', String(receiver))],
      { cwd: tempDir(t, 'keyplane-observability-guide-'), env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const [code] = await once(child, 'exit');
    t.equal(code, 0, stderr);
    const [metric, log, span] = stdout.trimEnd().split('\n');
    t.match(metric, /^keyplane_http_requests_total\{.*route="\/\.well-known\/openid-configuration".*\} 1$/);
    const reqId = (JSON.parse(log!) as { reqId: string }).reqId;
    t.match(
      span,
      new RegExp(`^GET /\\.well-known/openid-configuration trace [0-9a-f]{32} request ${reqId}$`),
      'the span names the log line’s request id',
    );
  },
);
