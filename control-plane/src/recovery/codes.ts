import { foldUsername } from '#lib/accounts/username.js';
import { fail } from '#lib/errors/keyplane-error.js';
import {
  generateRecoveryCodes,
  hashRecoveryCode,
  matchRecoveryCode,
  normalizeRecoveryCode,
} from '#lib/recovery/recovery-codes.js';
import { randomId } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices } from '../context.js';
import { limitPerAccount } from '../http/code-guard.js';
import { assertNotLocked, recordCodeFailure, recordCodeSuccess } from '../lockouts/code-lockout.js';
import { openSession, type SignInBrowser } from '../sessions/start-session.js';

/** The HMAC key for recovery-code hashes, derived from the master key for this purpose only. */
const MAC_PURPOSE = 'recovery-code';
/** RFC 8176: a recovery code is a one-time password. */
const RECOVERY_AMR = ['otp'];

export type RecoveryServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'secrets' | 'events' | 'now'
>;

/** Replaces the account's backup codes with ten new ones, returned this once; only keyed hashes are kept. */
export async function regenerateRecoveryCodes(
  services: Pick<RecoveryServices, 'storage' | 'secrets' | 'events' | 'now'>,
  actor: { identityId: string; sessionId: string },
): Promise<{ codes: string[]; receipt?: string }> {
  const macKey = services.secrets.macKey(MAC_PURPOSE);
  const codes = generateRecoveryCodes();
  const at = services.now();
  const hashed = codes.map((code) => ({
    codeId: randomId('rc', 8),
    codeHash: hashRecoveryCode(macKey, normalizeRecoveryCode(code)!),
  }));
  const recorded = await services.storage.transaction(async (tx) => {
    await tx.recoveryCodes.replace(actor.identityId, hashed, at);
    return services.events.record(tx, {
      type: 'recovery.regenerated',
      at,
      outcome: 'success',
      identityId: actor.identityId,
      sessionId: actor.sessionId,
      count: codes.length,
    });
  });
  return { codes, ...recorded };
}

export interface RecoverySignIn {
  identityId: string;
  /** Unused backup codes left after this one. */
  remaining: number;
  /** The new session's cookie value. */
  sessionToken: string;
  receipt?: string;
}

/**
 * Signs in with one backup code at assurance `recovery`, consuming it. An unknown account and a
 * wrong code get the same refusal after the same work; wrong codes count towards the lockout of
 * the method from `source` (the client address), and far more of them lock it from everywhere
 * (docs/security.md#backup-code-lockout). The per-IP limit is the caller's.
 */
export async function signInWithRecoveryCode(
  services: RecoveryServices,
  user: string,
  code: string,
  browser: SignInBrowser,
  source: string,
): Promise<RecoverySignIn> {
  const macKey = services.secrets.macKey(MAC_PURPOSE);
  const name = foldUsername(user);
  // Per name and source: a stranger's flood for a name must not hold its owner off either.
  await limitPerAccount(services, 'recovery-verify', sha256Hex(`${name}\n${source}`));
  const identity = await services.storage.identities.findByUsername(name);
  const refused = fail('invalid_recovery_code', 'that account name or backup code is not right');
  if (!identity) {
    // Same work as for a real account, so the answer's timing does not tell which names exist.
    matchRecoveryCode(macKey, code, []);
    throw refused;
  }
  const identityId = identity.identityId;
  await assertNotLocked(services, 'recovery', identityId, source);
  const candidates = await services.storage.recoveryCodes.listUnused(identityId);
  const match = matchRecoveryCode(macKey, code, candidates);
  if (!match) throw (await recordCodeFailure(services, 'recovery', identityId, source)) ?? refused;

  const at = services.now();
  const remaining = candidates.length - 1;
  const result = await services.storage.transaction(async (tx) => {
    // One conditional update: of two concurrent uses of the same code, one signs in.
    if (!(await tx.recoveryCodes.consume(identityId, match.codeId, at))) throw refused;
    const opened = await openSession(services, tx, browser, { identityId, assurance: 'recovery', amr: RECOVERY_AMR });
    const used = await services.events.record(tx, {
      type: 'recovery.used',
      at,
      outcome: 'success',
      identityId,
      sessionId: opened.sessionId,
      remaining,
    });
    return { sessionToken: opened.token, receipt: opened.receipt ?? used.receipt };
  });
  await recordCodeSuccess(services, 'recovery', identityId, source);
  return {
    identityId,
    remaining,
    sessionToken: result.sessionToken,
    ...(result.receipt ? { receipt: result.receipt } : {}),
  };
}
