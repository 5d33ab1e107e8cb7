/** How long a declined passkey offer stays declined: the person is asked again at most once a month. */
export const PASSKEY_UPGRADE_ASK_AGAIN_MS = 30 * 24 * 60 * 60 * 1000;

/** What decides whether a session is offered a passkey (docs/passkeys.md#upgrades). */
export interface PasskeyUpgradeFacts {
  /** The session's authentication methods (RFC 8176): `pop` when a passkey signed it in or stepped it up. */
  amr: readonly string[];
  /** When the session's person last authenticated (ms). */
  authTime: number;
  /** When each of the account's passkeys was created (ms). */
  passkeysCreatedAt: readonly number[];
  /** When the person last declined the offer (ms), or null. */
  declinedAt: number | null;
  now: number;
}

/**
 * True when a session signed in without a passkey (magic link, recovery code, connection) should be
 * offered one: not when a passkey proved this session, not once a passkey was added since it signed
 * in, and not within a month of the person declining.
 */
export function shouldOfferPasskeyUpgrade(facts: PasskeyUpgradeFacts): boolean {
  if (facts.amr.includes('pop')) return false;
  if (facts.passkeysCreatedAt.some((at) => at >= facts.authTime)) return false;
  return facts.declinedAt === null || facts.now - facts.declinedAt >= PASSKEY_UPGRADE_ASK_AGAIN_MS;
}
