import t from 'tap';
import { startLiveControlPlane } from '../../helpers/live-browser.js';
import { sendOversizedBody } from '../../helpers/oversized-body.js';

// Issue #47 item 11: under load, a huge body at an OAuth endpoint ended in a connection reset
// instead of an answer. Every endpoint, several at once, the body far past `http.bodyLimit`, each
// client writing all of it before it reads, as the fuzzing client did.
const BYTES = 24 * 1024 * 1024;
const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';

t.test('an oversized body gets 413 payload_too_large, never a reset, at every kind of endpoint', async (t) => {
  const cp = await startLiveControlPlane(t);
  const targets: Array<{ path: string; contentType: string; chunked?: boolean }> = [
    { path: '/auth/revoke', contentType: FORM },
    { path: '/auth/revoke', contentType: FORM, chunked: true },
    { path: '/auth/token', contentType: FORM },
    { path: '/auth/par', contentType: FORM, chunked: true },
    { path: '/auth/introspect', contentType: FORM },
    { path: '/register', contentType: JSON_TYPE },
    { path: '/auth/recovery/verify', contentType: JSON_TYPE, chunked: true },
    { path: '/auth/recovery/verify', contentType: FORM },
  ];
  const answers = await Promise.all(targets.map((target) => sendOversizedBody(cp.url, { ...target, bytes: BYTES })));
  answers.forEach((answer, i) => {
    const what = `${targets[i]!.path}${targets[i]!.chunked ? ' (chunked)' : ''}`;
    t.notOk('reset' in answer, `${what}: answered, not reset ${JSON.stringify(answer)}`);
    if ('reset' in answer) return;
    t.equal(answer.status, 413, what);
    t.match(answer.body, /payload_too_large/, what);
  });
});
