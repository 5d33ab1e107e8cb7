import t from 'tap';
import { decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify } from 'jose';
import {
  SSF_EVENTS,
  accountNamedBy,
  buildSecurityEvent,
  eventForReceipt,
  signSecurityEvent,
} from '#lib/ssf/security-event.js';

const at = '2026-12-07T12:00:00.000Z';
const ISS = 'https://id.example.com';

t.test('eventForReceipt maps receipts about an account to CAEP and RISC events, and nothing else', async (t) => {
  const of = (kind: string, extra: Record<string, unknown> = { identityId: 'usr_1' }) =>
    eventForReceipt({ kind, at, ...extra });
  t.match(of('session.revoked'), { type: SSF_EVENTS.sessionRevoked, payload: { event_timestamp: 1796644800 } });
  t.match(of('session.revoked', { identityId: 'usr_1', actor: { type: 'admin_token' } }), {
    payload: { initiating_entity: 'admin' },
  });
  t.match(of('device.revoked', { identityId: 'usr_1', actor: { type: 'person', id: 'usr_1' } }), {
    payload: { initiating_entity: 'user' },
  });
  t.match(of('passkey.added'), {
    type: SSF_EVENTS.credentialChange,
    payload: { credential_type: 'fido2-platform', change_type: 'create' },
  });
  t.match(of('passkey.removed'), { payload: { change_type: 'delete' } });
  t.match(of('totp.enabled'), { payload: { credential_type: 'app', change_type: 'create' } });
  t.match(of('step_up.completed'), {
    type: SSF_EVENTS.assuranceLevelChange,
    payload: { namespace: 'Custom', current_level: 'sensitive', change_direction: 'increase' },
  });
  t.match(of('account.renamed'), { type: SSF_EVENTS.tokenClaimsChange, payload: { claims: {} } });
  t.match(of('email.verified'), { type: SSF_EVENTS.identifierChanged, needsEmail: true });
  t.match(of('account.disabled'), { type: SSF_EVENTS.accountDisabled });
  t.match(of('account.enabled'), { type: SSF_EVENTS.accountEnabled });
  t.match(of('account.deleted'), { type: SSF_EVENTS.accountPurged });
  t.equal(of('token.issued'), null);
  t.equal(of('session.revoked', {}), null, 'a receipt naming no account');
});

t.test('accountNamedBy reads our iss_sub (also inside complex) and nothing else', async (t) => {
  t.equal(accountNamedBy({ format: 'iss_sub', iss: ISS, sub: 'usr_1' }, ISS), 'usr_1');
  t.equal(accountNamedBy({ format: 'complex', user: { format: 'iss_sub', iss: ISS, sub: 'usr_2' } }, ISS), 'usr_2');
  t.equal(accountNamedBy({ format: 'iss_sub', iss: 'https://other.example', sub: 'usr_1' }, ISS), null);
  t.equal(accountNamedBy({ format: 'email', email: 'a@example.com' }, ISS), null);
  t.equal(accountNamedBy('usr_1', ISS), null);
});

t.test('a SET is ES256 with typ secevent+jwt, no sub and no exp', async (t) => {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwt = await signSecurityEvent(
    buildSecurityEvent({
      issuer: ISS,
      audience: 'cl_rx',
      jti: 'set_1',
      now: Date.parse(at),
      subject: { format: 'iss_sub', iss: ISS, sub: 'usr_1' },
      type: SSF_EVENTS.accountDisabled,
      payload: {},
    }),
    { kid: 'k1', privateKey },
  );
  t.same(decodeProtectedHeader(jwt), { alg: 'ES256', kid: 'k1', typ: 'secevent+jwt' });
  const key = await importJWK(await exportJWK(publicKey), 'ES256');
  const { payload } = await jwtVerify(jwt, key, { issuer: ISS, audience: 'cl_rx', typ: 'secevent+jwt' });
  t.same(payload, {
    iss: ISS,
    aud: 'cl_rx',
    jti: 'set_1',
    iat: 1796644800,
    sub_id: { format: 'iss_sub', iss: ISS, sub: 'usr_1' },
    events: { [SSF_EVENTS.accountDisabled]: {} },
  });
});
