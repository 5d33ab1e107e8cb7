import { fail } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices } from '../context.js';

export type FounderServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'state'>;

/**
 * Founder bootstrap (like Grafana's or Jenkins' first-run token): while no founder account exists,
 * every start logs a one-time setup link `<issuer>/auth?setup=<token>`. Only a sign-up carrying
 * that token creates the founder; it works whether or not self-service sign-up is on. The token
 * lives in shared state (only its hash as the key) for a day and is consumed by the sign-up.
 */
export const SETUP_TOKEN_TTL_MS = 24 * 3600 * 1000;
const keyOf = (token: string) => `founder:setup:${sha256Hex(token)}`;

/** Logs (warn) and tells the operator the setup link while no founder exists; null once one does. */
export async function issueSetupLink(
  services: FounderServices & Pick<ControlPlaneServices, 'notify'>,
  log: { warn(details: object, message: string): void },
): Promise<string | null> {
  if (await services.storage.identities.founderExists()) return null;
  const token = randomToken(32);
  if (!(await services.state.setIfAbsent(keyOf(token), '1', SETUP_TOKEN_TTL_MS))) return null;
  const url = `${services.config.issuer}/auth?setup=${token}`;
  log.warn(
    { setupUrl: url },
    `no founder account yet: open ${url} within 24 hours to create it (one use; a restart issues a new link)`,
  );
  services.notify(`No founder account yet. Create it within 24 hours at: ${url}`);
  return url;
}

/** Checks a setup token without using it (registration-options). */
export async function checkSetupToken(services: FounderServices, token: string): Promise<void> {
  if (
    typeof token !== 'string' ||
    token.length > 100 ||
    (await services.state.get(keyOf(token))) === null ||
    (await services.storage.identities.founderExists())
  ) {
    throw fail('invalid_setup_token', 'this setup link is unknown, expired or used already');
  }
}

/** Consumes a setup token (registration-verify); returns a function that puts it back if the sign-up then fails. */
export async function consumeSetupToken(services: FounderServices, token: string): Promise<() => Promise<void>> {
  if ((await services.state.take(keyOf(token))) === null)
    throw fail('invalid_setup_token', 'this setup link is unknown, expired or used already');
  return async () => {
    await services.state.setIfAbsent(keyOf(token), '1', SETUP_TOKEN_TTL_MS);
  };
}
