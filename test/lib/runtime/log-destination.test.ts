import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { until } from '../../helpers/until.js';

const MODULE = new URL('../../../lib/runtime/log-destination.ts', import.meta.url).href;
const LOADER = fileURLToPath(new URL('../../loader/register.mjs', import.meta.url));

/**
 * A process that writes lines through `logDestination(1)` as the script says. The script may call
 * `done()` to tell the test (on a pipe of its own) that its lines are handed to the destination.
 */
function child(script: string) {
  const proc = spawn(
    process.execPath,
    [
      '--import',
      LOADER,
      '--input-type=module',
      '-e',
      `import { writeSync } from 'node:fs';\nimport { logDestination } from ${JSON.stringify(MODULE)};\nconst done = () => writeSync(3, 'done');\n${script}`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit', 'pipe'] },
  );
  let out = '';
  proc.stdout!.on('data', (chunk: Buffer) => (out += String(chunk)));
  const done = once(proc.stdio[3]!, 'data');
  return { proc, out: () => out, done };
}

t.test("a quiet server's line appears within the flush interval, without waiting for 16 KiB", async (t) => {
  const { proc, out } = child(
    "const log = logDestination(1, 50); log.write('one\\n'); process.stdin.on('data', () => process.exit(0));",
  );
  t.teardown(() => proc.kill());
  await until('the line', async () => (out() === 'one\n' ? true : undefined));
  t.pass('written by the flush timer');
  proc.stdin!.write('x');
  await once(proc, 'exit');
});

t.test('lines still buffered when the process exits are written', async (t) => {
  const { proc, out } = child(
    'const log = logDestination(1, 60_000); for (let i = 0; i < 3; i++) log.write(`line ${i}\\n`); setTimeout(() => process.exit(0), 20);',
  );
  const [code] = (await once(proc, 'close')) as [number];
  t.equal(code, 0);
  t.equal(out(), 'line 0\nline 1\nline 2\n');
});

t.test('lines written faster than a reader takes them all arrive, in order (a full non-blocking pipe)', async (t) => {
  // process.stdout makes standard output non-blocking, so a full pipe answers EAGAIN.
  const { proc, out, done } = child(
    "process.stdout; const log = logDestination(1, 50); process.stdin.once('data', () => { for (let i = 0; i < 20000; i++) log.write(`line ${i} ${'x'.repeat(100)}\\n`); done(); process.stdin.once('data', () => process.exit(0)); });",
  );
  t.teardown(() => proc.kill());
  proc.stdout!.pause();
  proc.stdin!.write('go');
  await done;
  proc.stdout!.resume();
  await until('every line', async () => (out().split('\n').length > 20000 ? true : undefined));
  const lines = out().trimEnd().split('\n');
  t.equal(lines.length, 20000);
  t.ok(
    lines.every((line, i) => line.startsWith(`line ${i} `)),
    'in order',
  );
  proc.stdin!.write('x');
  await once(proc, 'exit');
});

t.test('a reader that stalls costs at most 16 MiB: later lines are dropped and counted', async (t) => {
  const { proc, out } = child(
    "process.stdout; const log = logDestination(1, 50); const line = 'y'.repeat(1023) + '\\n'; for (let i = 0; i < 20 * 1024; i++) log.write(line); process.stdin.on('data', () => process.exit(0));",
  );
  t.teardown(() => proc.kill());
  await until('the drop notice', async () => (out().includes('"msg":"log lines dropped"') ? true : undefined), 60_000);
  const notice = JSON.parse(out().slice(out().indexOf('{"level":40')).split('\n')[0]!) as { dropped: number };
  const kept = out()
    .split('\n')
    .filter((line) => line.startsWith('y')).length;
  t.equal(kept + notice.dropped, 20 * 1024, 'every line was written or counted');
  t.ok(kept >= 16 * 1024, `at least 16 MiB kept (${kept} lines)`);
  proc.stdin!.write('x');
  await once(proc, 'exit');
});

t.test('a line longer than the buffer is written whole, in its place', async (t) => {
  const { proc, out } = child(
    "const log = logDestination(1, 60_000); log.write('before\\n'); log.write('w'.repeat(100_000) + '\\n'); log.write('after\\n'); setTimeout(() => process.exit(0), 20);",
  );
  const [code] = (await once(proc, 'close')) as [number];
  t.equal(code, 0);
  t.equal(out(), `before\n${'w'.repeat(100_000)}\nafter\n`);
});
