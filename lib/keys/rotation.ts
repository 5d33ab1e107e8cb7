/**
 * Key-ring lifecycle as pure decisions. A ring always holds one `current` key (signs) and one
 * `next` key (published ahead of use, so verifiers that cache the JWKS already know it when it
 * starts signing). Retired keys stay published until everything they signed has expired.
 */

export type RingState = 'next' | 'current' | 'retired';

export interface RingKey {
  kid: string;
  state: RingState;
  createdAt: number;
  activatedAt: number | null;
  retiredAt: number | null;
}

export interface RotationPolicy {
  /** Rotate once the current key has signed this long; 0 means only on demand. */
  rotateEveryMs: number;
  /** Keep retired keys published this long after retirement. */
  retainRetiredMs: number;
}

export type RingAction =
  | { type: 'create'; state: 'current' | 'next' }
  | { type: 'promote'; kid: string }
  | { type: 'retire'; kid: string }
  | { type: 'drop'; kid: string };

/** What must happen for the ring to be whole and on schedule at `now`; `force` rotates regardless. */
export function planRotation(
  keys: readonly RingKey[],
  now: number,
  policy: RotationPolicy,
  force = false,
): RingAction[] {
  const actions: RingAction[] = [];
  const current = keys.filter((k) => k.state === 'current').sort(byNewest)[0];
  const next = keys.filter((k) => k.state === 'next').sort(byNewest)[0];
  const due =
    current !== undefined &&
    (force || (policy.rotateEveryMs > 0 && now - (current.activatedAt ?? current.createdAt) >= policy.rotateEveryMs));

  if (!current) {
    if (next) actions.push({ type: 'promote', kid: next.kid });
    else actions.push({ type: 'create', state: 'current' });
    actions.push({ type: 'create', state: 'next' });
  } else if (due) {
    actions.push({ type: 'retire', kid: current.kid });
    if (next) actions.push({ type: 'promote', kid: next.kid });
    else actions.push({ type: 'create', state: 'current' });
    actions.push({ type: 'create', state: 'next' });
  } else if (!next) {
    actions.push({ type: 'create', state: 'next' });
  }
  for (const key of keys) {
    if (key.state === 'retired' && key.retiredAt !== null && now - key.retiredAt >= policy.retainRetiredMs) {
      actions.push({ type: 'drop', kid: key.kid });
    }
  }
  return actions;
}

/** The keys a JWKS lists: next, current and retired ones still inside their retention. */
export function publishedKeys<K extends RingKey>(keys: readonly K[], now: number, policy: RotationPolicy): K[] {
  return keys.filter(
    (k) => k.state !== 'retired' || (k.retiredAt !== null && now - k.retiredAt < policy.retainRetiredMs),
  );
}

function byNewest(a: RingKey, b: RingKey): number {
  return (b.activatedAt ?? b.createdAt) - (a.activatedAt ?? a.createdAt);
}
