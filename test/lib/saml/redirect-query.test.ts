import t from 'tap';
import { redirectQueryConsistent } from '#lib/saml/bindings.js';

t.test('a Redirect query must read the same to the handler and to the signature check', async (t) => {
  const raw = 'SAMLRequest=abc%2B&RelayState=https%3A%2F%2Fsp.example%2F&SigAlg=x&Signature=s%3D';
  const decoded = { SAMLRequest: 'abc+', RelayState: 'https://sp.example/', SigAlg: 'x', Signature: 's=' };
  t.ok(redirectQueryConsistent(raw, decoded), 'as sent');
  t.notOk(
    redirectQueryConsistent('SAMLRequest=abc&Relay%53tate=evil', { SAMLRequest: 'abc', RelayState: 'evil' }),
    'a percent-encoded name',
  );
  t.notOk(redirectQueryConsistent('SAMLRequest=abc&RelayState=a&RelayState=b', { SAMLRequest: 'abc' }), 'a name twice');
  t.notOk(redirectQueryConsistent('SAMLRequest=abc', { SAMLRequest: 'abc', RelayState: 'x' }), 'a value not sent');
  t.notOk(redirectQueryConsistent('SAMLRequest=abc', { SAMLRequest: 'abd' }), 'a value read differently');
  t.ok(redirectQueryConsistent('SAMLRequest=a+b&sp=1', { SAMLRequest: 'a b', sp: '1' }), 'form decoding of +');
});
