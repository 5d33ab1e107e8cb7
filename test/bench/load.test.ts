import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { childEnv } from '../helpers/cli.js';

const run = promisify(execFile);

t.test('bench:load drives the control plane over HTTPS with one worker and two (smoke scale)', async (t) => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/load.ts'], {
    env: {
      ...childEnv(),
      BENCH_TLS: '1',
      BENCH_WORKERS: '1,2',
      BENCH_SECONDS: '0.5',
      BENCH_ROUNDS: '1',
      BENCH_WARMUP: '0',
      BENCH_CONNECTIONS: '2',
    },
    maxBuffer: 16 << 20,
  });
  t.match(stdout, /bench:load — SQLite, HTTPS, workers 1 and 2/);
  for (const op of ['client-credentials grant', 'introspection']) {
    t.match(stdout, new RegExp(`${op}:\\n`), op);
    t.match(stdout, /\| 1 worker \| \d+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| \d+ \| \d+ \|/);
    t.match(stdout, /\| 2 workers \| \d+ \|/);
  }
  t.match(stdout, /2 workers ÷ 1 worker: [0-9.]+ in requests\/s/);
});
