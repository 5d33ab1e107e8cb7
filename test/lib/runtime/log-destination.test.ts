import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { until } from '../../helpers/until.js';

const MODULE = new URL('../../../lib/runtime/log-destination.ts', import.meta.url).href;
const LOADER = fileURLToPath(new URL('../../loader/register.mjs', import.meta.url));

/** A process that writes lines through `logDestination(1)` as the script says. */
function child(script: string) {
  const proc = spawn(
    process.execPath,
    [
      '--import',
      LOADER,
      '--input-type=module',
      '-e',
      `import { logDestination } from ${JSON.stringify(MODULE)};\n${script}`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let out = '';
  proc.stdout.on('data', (chunk: Buffer) => (out += String(chunk)));
  return { proc, out: () => out };
}

t.test("a quiet server's line appears within the flush interval, without waiting for 4 KiB", async (t) => {
  const { proc, out } = child(
    "const log = logDestination(1, 50); log.write('one\\n'); process.stdin.on('data', () => process.exit(0));",
  );
  t.teardown(() => proc.kill());
  await until('the line', () => out() === 'one\n');
  t.pass('written by the flush timer');
  proc.stdin.write('x');
  await once(proc, 'exit');
});

t.test('lines still buffered when the process exits are written', async (t) => {
  const { proc, out } = child(
    'const log = logDestination(1, 60_000); for (let i = 0; i < 3; i++) log.write(`line ${i}\\n`); setTimeout(() => process.exit(0), 20);',
  );
  const [code] = (await once(proc, 'exit')) as [number];
  t.equal(code, 0);
  await until('the output', () => out().length > 0);
  t.equal(out(), 'line 0\nline 1\nline 2\n');
});
