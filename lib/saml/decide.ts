import { rankAssurance, type AssuranceLevel } from '../assurance/assurance.js';

/**
 * What an SSO request needs before a Response can be issued (saml-core §3.4.1): a session, a
 * fresh authentication for ForceAuthn, the assurance RequestedAuthnContext asked for. IsPassive
 * turns every interaction into a NoPassive answer; a context no level can meet is NoAuthnContext.
 */
export interface SsoNeeds {
  /** undefined: nothing asked; null: asked for classes no sign-in here can meet. */
  requiredAssurance?: AssuranceLevel | null;
  forceAuthn: boolean;
  isPassive: boolean;
  /** When the request arrived (ms): a sign-in or step-up at or after it is fresh. */
  receivedAt: number;
}

export type SsoDecision =
  | { action: 'issue' }
  | { action: 'login' }
  | { action: 'step_up' }
  | { action: 'error'; status: 'NoPassive' | 'NoAuthnContext' };

export function decideSso(
  needs: SsoNeeds,
  session: { assurance: AssuranceLevel; authTime: number } | undefined,
): SsoDecision {
  if (needs.requiredAssurance === null) return { action: 'error', status: 'NoAuthnContext' };
  if (!session) return needs.isPassive ? { action: 'error', status: 'NoPassive' } : { action: 'login' };
  const stale = needs.forceAuthn && session.authTime < needs.receivedAt;
  const weak =
    needs.requiredAssurance !== undefined && rankAssurance(session.assurance) < rankAssurance(needs.requiredAssurance);
  if (stale || weak) return needs.isPassive ? { action: 'error', status: 'NoPassive' } : { action: 'step_up' };
  return { action: 'issue' };
}
