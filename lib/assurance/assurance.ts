/**
 * Assurance levels, weakest first (docs/accounts.md#assurance-and-step-up): a recovery code proves least, a step-up
 * (a passkey re-verified for the purpose, plus TOTP when active) most. Pure: no I/O, `now` passed in.
 */
export type AssuranceLevel = 'recovery' | 'email' | 'passkey' | 'sensitive';

export const ASSURANCE_LEVELS: readonly AssuranceLevel[] = ['recovery', 'email', 'passkey', 'sensitive'];

/** Rank of a level in the order above (0 = weakest). */
export function rankAssurance(level: AssuranceLevel): number {
  return ASSURANCE_LEVELS.indexOf(level);
}

export function isAssuranceLevel(value: unknown): value is AssuranceLevel {
  return typeof value === 'string' && (ASSURANCE_LEVELS as readonly string[]).includes(value);
}

/** True when `actual` is at least as strong as `required`. */
export function meetsAssurance(actual: AssuranceLevel, required: AssuranceLevel): boolean {
  return rankAssurance(actual) >= rankAssurance(required);
}

export interface AssuranceState {
  /** The level the sign-in proved (never `sensitive`: that only comes from a step-up). */
  assurance: AssuranceLevel;
  /** When the last step-up completed (ms), or null. */
  stepUpAt: number | null;
}

/**
 * The level in force at `now`: `sensitive` while the last step-up is younger than the window,
 * otherwise the sign-in's own level (a lapsed step-up reads as `passkey`, because a step-up
 * re-verifies a passkey and raises the base level to at least that).
 */
export function effectiveAssurance(session: AssuranceState, now: number, stepUpWindowMs: number): AssuranceLevel {
  const base: AssuranceLevel = session.assurance === 'sensitive' ? 'passkey' : session.assurance;
  if (session.stepUpAt !== null && now >= session.stepUpAt && now - session.stepUpAt < stepUpWindowMs)
    return 'sensitive';
  return base;
}
