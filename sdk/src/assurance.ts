/** Assurance levels, weakest first, as Keyplane states them in `svc.assurance` and `acr`. */
export const ASSURANCE_LEVELS = ['recovery', 'email', 'passkey', 'sensitive'] as const;
export type AssuranceLevel = (typeof ASSURANCE_LEVELS)[number];

export function isAssuranceLevel(value: unknown): value is AssuranceLevel {
  return typeof value === 'string' && (ASSURANCE_LEVELS as readonly string[]).includes(value);
}

/** The level a set of ID-token claims proves: `svc.assurance`, else `acr`, else none. */
export function assuranceOf(claims: Record<string, unknown>): AssuranceLevel | undefined {
  const svc = claims.svc as { assurance?: unknown } | undefined;
  if (isAssuranceLevel(svc?.assurance)) return svc.assurance;
  return isAssuranceLevel(claims.acr) ? claims.acr : undefined;
}

/**
 * Whether the claims meet `level`. `sensitive` is a step-up that lasts `sensitiveWindowSeconds`
 * after `auth_time` (Keyplane's own window is 5 minutes): a token minted as `sensitive` does not
 * keep a session sensitive for its whole lifetime.
 */
export function meetsAssurance(
  claims: Record<string, unknown>,
  level: AssuranceLevel,
  options: { nowSeconds: number; sensitiveWindowSeconds?: number },
): boolean {
  const proved = assuranceOf(claims);
  if (!proved || ASSURANCE_LEVELS.indexOf(proved) < ASSURANCE_LEVELS.indexOf(level)) return false;
  if (level !== 'sensitive') return true;
  const authTime = claims.auth_time;
  return typeof authTime === 'number' && options.nowSeconds - authTime <= (options.sensitiveWindowSeconds ?? 300);
}
