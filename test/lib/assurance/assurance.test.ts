import t from 'tap';
import {
  ASSURANCE_LEVELS,
  effectiveAssurance,
  isAssuranceLevel,
  meetsAssurance,
  rankAssurance,
} from '#lib/assurance/assurance.js';

const WINDOW = 5 * 60_000;

t.test('orders recovery < email < passkey < sensitive', async (t) => {
  t.same(ASSURANCE_LEVELS, ['recovery', 'email', 'passkey', 'sensitive']);
  t.ok(rankAssurance('recovery') < rankAssurance('email'));
  t.ok(rankAssurance('email') < rankAssurance('passkey'));
  t.ok(rankAssurance('passkey') < rankAssurance('sensitive'));
  t.ok(isAssuranceLevel('email'));
  t.notOk(isAssuranceLevel('admin'));
  t.notOk(isAssuranceLevel(3));
});

t.test('meetsAssurance is at-least, never more than proved', async (t) => {
  for (const actual of ASSURANCE_LEVELS) {
    for (const required of ASSURANCE_LEVELS) {
      t.equal(
        meetsAssurance(actual, required),
        rankAssurance(actual) >= rankAssurance(required),
        `${actual} vs ${required}`,
      );
    }
  }
  t.notOk(meetsAssurance('recovery', 'passkey'), 'a recovery sign-in is not a passkey sign-in');
  t.notOk(meetsAssurance('passkey', 'sensitive'), 'a plain sign-in is not sensitive');
});

t.test('a step-up counts as sensitive inside its window only', async (t) => {
  const at = 1_000_000;
  const session = { assurance: 'passkey' as const, stepUpAt: at };
  t.equal(effectiveAssurance(session, at, WINDOW), 'sensitive');
  t.equal(effectiveAssurance(session, at + WINDOW - 1, WINDOW), 'sensitive');
  t.equal(effectiveAssurance(session, at + WINDOW, WINDOW), 'passkey', 'a lapsed step-up reads as passkey');
  t.equal(effectiveAssurance(session, at - 1, WINDOW), 'passkey', 'a step-up in the future does not count');
});

t.test('without a step-up the sign-in level stands', async (t) => {
  t.equal(effectiveAssurance({ assurance: 'recovery', stepUpAt: null }, 5, WINDOW), 'recovery');
  t.equal(effectiveAssurance({ assurance: 'email', stepUpAt: null }, 5, WINDOW), 'email');
  t.equal(effectiveAssurance({ assurance: 'passkey', stepUpAt: null }, 5, WINDOW), 'passkey');
  t.equal(
    effectiveAssurance({ assurance: 'sensitive', stepUpAt: null }, 5, WINDOW),
    'passkey',
    'a stored sensitive never outlives its window',
  );
});
