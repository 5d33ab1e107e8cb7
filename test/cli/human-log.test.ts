import t from 'tap';
import { formatLogLine, humanLogStream } from '../../cli/src/human-log.js';
import { upSummary } from '../../cli/src/commands/up.js';

const line = (record: Record<string, unknown>) => JSON.stringify({ time: 1, pid: 1, hostname: 'h', ...record });

t.test('up shows warnings and errors as one short line and drops request logs', async (t) => {
  t.equal(
    formatLogLine(line({ level: 30, msg: 'request completed', req: { url: '/' } }), 'gateway'),
    null,
    'info is dropped',
  );
  t.equal(formatLogLine(line({ level: 20, msg: 'debug' }), 'gateway'), null, 'debug is dropped');
  t.equal(formatLogLine(line({ level: 40, msg: 'upstream slow' }), 'gateway'), 'warning [gateway] upstream slow');
  t.equal(
    formatLogLine(line({ level: 50, msg: 'request failed', err: { message: 'ECONNREFUSED' } }), 'control plane'),
    'error [control plane] request failed: ECONNREFUSED',
  );
  t.equal(
    formatLogLine(line({ level: 50, msg: 'same', err: { message: 'same' } }), 'gateway'),
    'error [gateway] same',
    'an error message equal to msg is not repeated',
  );
  t.equal(formatLogLine(line({ level: 60 }), 'gateway'), 'fatal [gateway] (no message)');
  t.equal(formatLogLine(line({ level: 70, msg: 'beyond fatal' }), 'gateway'), 'fatal [gateway] beyond fatal');
  t.equal(
    formatLogLine(
      line({ level: 40, msg: 'no founder account yet', setupUrl: 'http://x/auth?setup=t' }),
      'control plane',
    ),
    null,
    'the founder link is left to the summary',
  );
  t.equal(formatLogLine('not json', 'gateway'), 'gateway: not json', 'a stray line is shown as it is');
  t.equal(formatLogLine('  ', 'gateway'), null);
  t.equal(
    formatLogLine(JSON.stringify({ level: 'warn', msg: 'x' }), 'gateway'),
    null,
    'a record without a numeric level is dropped',
  );
});

t.test('the human log stream joins lines split across writes', async (t) => {
  let out = '';
  const sink = { write: (text: string) => ((out += text), true) } as unknown as NodeJS.WritableStream;
  const stream = humanLogStream(sink, 'gateway');
  const warning = line({ level: 40, msg: 'split warning' });
  stream.write(line({ level: 30, msg: 'quiet' }) + '\n' + warning.slice(0, 10));
  stream.write(warning.slice(10) + '\n');
  await new Promise<void>((resolve) => stream.end(resolve));
  t.equal(out, 'warning [gateway] split warning\n');
});

t.test('the up summary names each URL once and the founder link once', async (t) => {
  const summary = upSummary(
    { controlPlane: 'http://localhost:4400', gateway: 'http://localhost:4480', demo: 'http://127.0.0.1:4490' },
    ['No founder account yet. Create it within 24 hours at: http://localhost:4400/auth?setup=abc'],
    { clientId: 'kp-gw', created: false },
  );
  t.equal(summary.split('http://localhost:4480/').length - 1, 1);
  t.equal(summary.split('http://localhost:4400/auth\n').length - 1, 1);
  t.equal(summary.split('http://127.0.0.1:4490/').length - 1, 1);
  t.equal(summary.split('setup=abc').length - 1, 1);
  t.match(summary, 'Gateway client kp-gw found');
});
