import t from 'tap';
import { describeUserAgent, keptUserAgent, USER_AGENT_MAX } from '#lib/accounts/user-agent.js';

t.test('names browsers and systems as a person knows them', async (t) => {
  const cases: Array<[string | null, string]> = [
    [
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/139.0.0.0 Safari/537.36',
      'Chrome 139 on macOS',
    ],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0', 'Firefox 128 on Windows'],
    [
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36',
      'Chrome 126 on Android',
    ],
    [
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/139.0.0.0 Safari/537.36',
      'Chrome 139 on Linux',
    ],
    ['curl/8.5.0', 'curl 8'],
    ['Mozilla/5.0 (compatible; something unknown)', 'Unknown browser'],
    [null, 'Unknown browser'],
  ];
  for (const [ua, label] of cases) t.equal(describeUserAgent(ua).label, label, String(ua));
  t.same(describeUserAgent(null), { browser: null, os: null, label: 'Unknown browser' });
});

t.test('keeps a trimmed, capped User-Agent', async (t) => {
  t.equal(keptUserAgent(undefined), null);
  t.equal(keptUserAgent('  '), null);
  t.equal(keptUserAgent(' curl/8 '), 'curl/8');
  t.equal(keptUserAgent('x'.repeat(2000))!.length, USER_AGENT_MAX);
});
