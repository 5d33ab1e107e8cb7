import t from 'tap';
import { ALL_AREAS } from '../../../control-plane/src/app.js';
import { sharedSchemaCompilers } from '../../../control-plane/src/http/schema-compilers.js';
import { build } from '../../helpers/build.js';

t.test('a control plane built with chosen areas serves those and answers 404 for the rest', async (t) => {
  const { app } = await build(t, { areas: ['health', 'discovery'] });
  t.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  t.equal((await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).statusCode, 200);
  const absent = await app.inject({ method: 'GET', url: '/account' });
  t.equal(absent.statusCode, 404);
  t.equal(absent.json().ok, false, 'the envelope still answers: errors are infrastructure, not an area');
  t.equal(
    (await app.inject({ method: 'POST', url: '/auth/registration-options', payload: {} })).statusCode,
    404,
    'the passkeys area is not registered',
  );
});

t.test('the whole app registers every area, as before', async (t) => {
  const whole = await build(t);
  const chosen = await build(t, { areas: ALL_AREAS });
  t.equal(chosen.app.printRoutes(), whole.app.printRoutes());
  t.not((await whole.app.inject({ method: 'GET', url: '/account' })).statusCode, 404);
  t.not((await whole.app.inject({ method: 'POST', url: '/auth/registration-options', payload: {} })).statusCode, 404);
});

t.test('apps in one process share compiled schemas, keyed by content, not by object', async (t) => {
  const schema = () => ({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] });
  const options = { customOptions: {} };
  const validate = sharedSchemaCompilers.buildValidator!({}, options as never);
  const first = validate({ schema: schema(), method: 'POST', url: '/x', httpPart: 'body' } as never);
  const again = sharedSchemaCompilers.buildValidator!(
    {},
    options as never,
  )({
    schema: schema(),
    method: 'POST',
    url: '/y',
    httpPart: 'body',
  } as never);
  t.equal(again, first, 'an equal schema on another app compiles once');
  t.equal((first as (data: unknown) => boolean)({ a: 'x' }), true);
  t.equal((first as (data: unknown) => boolean)({}), false);
  const other = validate({
    schema: { ...schema(), required: [] },
    method: 'POST',
    url: '/x',
    httpPart: 'body',
  } as never);
  t.not(other, first, 'a different schema compiles on its own');
  const withShared = sharedSchemaCompilers.buildValidator!(
    { s: { $id: 's', type: 'string' } },
    options as never,
  )({
    schema: schema(),
    method: 'POST',
    url: '/x',
    httpPart: 'body',
  } as never);
  t.not(withShared, first, 'other shared schemas are another key');

  const serialize = sharedSchemaCompilers.buildSerializer!({}, {} as never);
  const response = () => ({ type: 'object', properties: { ok: { type: 'boolean' } } });
  const s1 = serialize({ schema: response(), method: 'GET', url: '/x', httpStatus: '200' } as never);
  t.equal(
    sharedSchemaCompilers.buildSerializer!(
      {},
      {} as never,
    )({ schema: response(), method: 'GET', url: '/z', httpStatus: '200' } as never),
    s1,
  );
  t.equal((s1 as (doc: unknown) => string)({ ok: true, secret: 'x' }), '{"ok":true}');
});
