import t from 'tap';
import { planRotation, publishedKeys, type RingKey } from '#lib/keys/rotation.js';

const DAY = 86_400_000;
const policy = { rotateEveryMs: 90 * DAY, retainRetiredMs: 10 * DAY };
const key = (kid: string, state: RingKey['state'], at: number, retiredAt: number | null = null): RingKey => ({
  kid,
  state,
  createdAt: at,
  activatedAt: state === 'next' ? null : at,
  retiredAt,
});

t.test('a fresh ring gets a current and a next key', async (t) => {
  t.same(planRotation([], 0, policy), [
    { type: 'create', state: 'current' },
    { type: 'create', state: 'next' },
  ]);
});

t.test('a whole ring inside its period needs nothing', async (t) => {
  t.same(planRotation([key('c', 'current', 0), key('n', 'next', 0)], 89 * DAY, policy), []);
});

t.test('a due ring retires current, promotes next and publishes a new next', async (t) => {
  t.same(planRotation([key('c', 'current', 0), key('n', 'next', 0)], 90 * DAY, policy), [
    { type: 'retire', kid: 'c' },
    { type: 'promote', kid: 'n' },
    { type: 'create', state: 'next' },
  ]);
});

t.test('force rotates regardless of the schedule; rotateEveryMs 0 never rotates by itself', async (t) => {
  const ring = [key('c', 'current', 0), key('n', 'next', 0)];
  t.same(
    planRotation(ring, 1, policy, true).map((a) => a.type),
    ['retire', 'promote', 'create'],
  );
  t.same(planRotation(ring, 10_000 * DAY, { ...policy, rotateEveryMs: 0 }), []);
});

t.test('a ring missing its next key gets one; missing current promotes next', async (t) => {
  t.same(planRotation([key('c', 'current', 0)], 1, policy), [{ type: 'create', state: 'next' }]);
  t.same(planRotation([key('n', 'next', 0)], 1, policy), [
    { type: 'promote', kid: 'n' },
    { type: 'create', state: 'next' },
  ]);
});

t.test('retired keys stay published through their retention, then are dropped', async (t) => {
  const ring = [key('r', 'retired', 0, 100 * DAY), key('c', 'current', 100 * DAY), key('n', 'next', 100 * DAY)];
  t.same(
    publishedKeys(ring, 109 * DAY, policy).map((k) => k.kid),
    ['r', 'c', 'n'],
  );
  t.same(planRotation(ring, 109 * DAY, policy), []);
  t.same(
    publishedKeys(ring, 110 * DAY, policy).map((k) => k.kid),
    ['c', 'n'],
  );
  t.same(planRotation(ring, 110 * DAY, policy), [{ type: 'drop', kid: 'r' }]);
});
