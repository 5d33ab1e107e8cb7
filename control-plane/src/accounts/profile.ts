import { mergePreferences, type Preferences } from '#lib/accounts/preferences.js';
import { checkFreeText, checkUsername, DISPLAY_NAME_MAX } from '#lib/accounts/username.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';

export type ProfileServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

/** The account's current username, or null for an unknown id. */
export async function usernameOf(
  services: Pick<ProfileServices, 'storage'>,
  identityId: string,
): Promise<string | null> {
  return (await services.storage.identities.get(identityId))?.username ?? null;
}

/** Sets the display name (checked free text, up to 64 characters); returns it as stored. */
export async function setDisplayName(
  services: Pick<ProfileServices, 'storage' | 'now'>,
  identityId: string,
  input: unknown,
): Promise<string> {
  const displayName = checkFreeText(input, DISPLAY_NAME_MAX, 'display_name_invalid', 'the display name');
  await services.storage.identities.setDisplayName(identityId, displayName, services.now());
  return displayName;
}

export interface Renamed {
  username: string;
  /** Previous usernames, which still resolve (docs/accounts.md#the-account). */
  aliases: string[];
  /** The receipt of `account.renamed`; absent when the name did not change or the ledger is off. */
  receipt?: string;
}

/** Changes the username; the old one stays an alias. Renaming to the current name records nothing. */
export async function renameAccount(services: ProfileServices, identityId: string, input: unknown): Promise<Renamed> {
  const username = checkUsername(input);
  const now = services.now();
  const { receipt } = await services.storage.transaction(async (tx) => {
    const identity = await tx.identities.get(identityId);
    if (identity?.username === username) return {};
    if (!(await tx.identities.rename(identityId, username, now)))
      throw fail('username_taken', 'that username is taken');
    return services.events.record(tx, { type: 'account.renamed', at: now, outcome: 'success', identityId });
  });
  return { username, aliases: await services.storage.identities.aliases(identityId), ...(receipt ? { receipt } : {}) };
}

/** The language the account chose for its pages (preference `lang`), if any: read per page request. */
export async function preferredLanguage(
  services: Pick<ProfileServices, 'storage'>,
  identityId: string,
): Promise<string | undefined> {
  return (await services.storage.identities.get(identityId))?.preferences['lang'];
}

/** Merges preferences key by key (null removes a key) in one transaction; returns the result. */
export async function updatePreferences(
  services: Pick<ProfileServices, 'storage' | 'now'>,
  identityId: string,
  update: unknown,
): Promise<Preferences> {
  return services.storage.transaction(async (tx) => {
    const identity = await tx.identities.get(identityId);
    const merged = mergePreferences((identity?.preferences ?? {}) as Preferences, update);
    await tx.identities.setPreferences(identityId, merged as Record<string, string>, services.now());
    return merged;
  });
}
