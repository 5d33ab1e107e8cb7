import { createHash } from 'node:crypto';
import t from 'tap';
import { checkCodeExchange } from '#lib/oauth/code-exchange.js';
import { isKeyplaneError } from '#lib/errors/keyplane-error.js';

const verifier = 'v'.repeat(43);
const code = {
  clientId: 'cl_1',
  redirectUri: 'https://app.example.com/cb',
  codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
  dpopJkt: null,
  expiresAt: 2000,
};
const good = {
  clientId: 'cl_1',
  redirectUri: 'https://app.example.com/cb',
  verifier,
  proofJkt: null,
  now: 1000,
  sessionLive: true,
};

function refusal(fn: () => void): { reason: string; message: string } | null {
  try {
    fn();
    return null;
  } catch (error) {
    if (!isKeyplaneError(error)) throw error;
    return { reason: error.reason, message: error.message };
  }
}

t.test('a good exchange passes every check', async (t) => {
  t.equal(
    refusal(() => checkCodeExchange(code, good)),
    null,
  );
  t.equal(
    refusal(() => checkCodeExchange({ ...code, dpopJkt: 'jkt' }, { ...good, proofJkt: 'jkt' })),
    null,
  );
});

t.test('refuses each broken exchange with its RFC error', async (t) => {
  const cases: Array<[string, () => void, string, RegExp]> = [
    ['expired', () => checkCodeExchange(code, { ...good, now: 2000 }), 'invalid_grant', /expired/],
    ['another client', () => checkCodeExchange(code, { ...good, clientId: 'cl_2' }), 'invalid_grant', /another client/],
    [
      'another redirect URI',
      () => checkCodeExchange(code, { ...good, redirectUri: 'https://app.example.com/cb/' }),
      'invalid_grant',
      /redirect_uri/,
    ],
    [
      'a malformed verifier',
      () => checkCodeExchange(code, { ...good, verifier: 'short' }),
      'invalid_grant',
      /malformed/,
    ],
    [
      'a wrong verifier',
      () => checkCodeExchange(code, { ...good, verifier: 'w'.repeat(43) }),
      'invalid_grant',
      /does not match/,
    ],
    [
      'no proof for a dpop_jkt',
      () => checkCodeExchange({ ...code, dpopJkt: 'jkt' }, good),
      'invalid_dpop_proof',
      /dpop_jkt/,
    ],
    [
      'another key for a dpop_jkt',
      () => checkCodeExchange({ ...code, dpopJkt: 'jkt' }, { ...good, proofJkt: 'other' }),
      'invalid_dpop_proof',
      /dpop_jkt/,
    ],
    ['the sign-in ended', () => checkCodeExchange(code, { ...good, sessionLive: false }), 'invalid_grant', /has ended/],
  ];
  for (const [name, fn, reason, message] of cases) {
    const got = refusal(fn);
    t.equal(got?.reason, reason, name);
    t.match(got?.message, message, name);
  }
});
