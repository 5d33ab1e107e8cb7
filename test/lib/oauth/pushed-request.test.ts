import t from 'tap';
import { bindPushedDpop, pushedParamsOf, pushedRequestIdOf, pushedRequestUri } from '#lib/oauth/pushed-request.js';

const ID = 'a'.repeat(43);

t.test('a pushed request_uri carries a 256-bit id and nothing else is taken for one', async (t) => {
  t.equal(pushedRequestUri(ID), `urn:ietf:params:oauth:request_uri:${ID}`);
  t.equal(pushedRequestIdOf(pushedRequestUri(ID)), ID);
  t.equal(pushedRequestIdOf('urn:ietf:params:oauth:request_uri:short'), null);
  t.equal(pushedRequestIdOf(`https://example.com/${ID}`), null);
});

t.test('the pushed parameters drop client credentials and refuse request_uri or another client_id', async (t) => {
  const pushed = pushedParamsOf({ client_secret: 's', scope: 'openid', client_assertion: 'x' }, 'cl_1');
  t.same(pushed, { ok: true, params: { scope: 'openid', client_id: 'cl_1' } });
  t.match(pushedParamsOf({ request_uri: 'urn:x' }, 'cl_1'), { ok: false, description: /request_uri/ });
  t.match(pushedParamsOf({ client_id: 'cl_2' }, 'cl_1'), { ok: false, description: /client_id/ });
});

t.test('a DPoP proof at the push becomes dpop_jkt, and must agree with one sent', async (t) => {
  t.same(bindPushedDpop({ scope: 'openid' }, null), { ok: true, params: { scope: 'openid' } });
  t.same(bindPushedDpop({}, ID), { ok: true, params: { dpop_jkt: ID } });
  t.same(bindPushedDpop({ dpop_jkt: ID }, ID), { ok: true, params: { dpop_jkt: ID } });
  t.match(bindPushedDpop({ dpop_jkt: 'b'.repeat(43) }, ID), { ok: false });
});
