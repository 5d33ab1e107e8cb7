import t from 'tap';
import { sendOversizedBody } from '../helpers/oversized-body.js';
import { signAccessToken, startTestGateway, startUpstream } from './helpers.js';

// Issue #47 item 11 at the gateway: the bodies it reads itself (an MCP route's JSON-RPC for its
// tool rules, the sign-out form) answer 413 payload_too_large when too large, never a reset.
const BYTES = 24 * 1024 * 1024;

t.test('an oversized body the gateway reads gets 413 payload_too_large, never a reset', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url });
  await gw.configure({
    mode: 'enforce',
    routes: [{ path: '/mcp', mcp: true, tools: { delete_x: { min_assurance: 'sensitive' } } }],
  });
  const token = await signAccessToken({ audience: `${gw.url}/mcp`, clientId: 'some-mcp-client', scope: 'openid' });
  const bearer = `Authorization: Bearer ${token}\r\n`;
  const targets = [
    { path: '/mcp', contentType: 'application/json', headers: bearer },
    { path: '/mcp', contentType: 'application/json', headers: bearer, chunked: true },
    { path: '/_gate/signout', contentType: 'application/x-www-form-urlencoded' },
    { path: '/_gate/signout', contentType: 'application/x-www-form-urlencoded', chunked: true },
  ];
  const answers = await Promise.all(targets.map((target) => sendOversizedBody(gw.url, { ...target, bytes: BYTES })));
  answers.forEach((answer, i) => {
    const what = `${targets[i]!.path}${targets[i]!.chunked ? ' (chunked)' : ''}`;
    t.notOk('reset' in answer, `${what}: answered, not reset ${JSON.stringify(answer)}`);
    if ('reset' in answer) return;
    t.equal(answer.status, 413, what);
    t.match(answer.body, /payload_too_large/, what);
  });
  t.equal(upstream.seen.length, 0);
});
