import { COMMITTED_AUTHENTICATOR_LIST } from './passkey-authenticator-aaguids.js';

/** What a passkey list shows for an authenticator: its name and, when small enough to ship, an SVG icon (data: URI). */
export interface AuthenticatorName {
  name: string;
  icon?: string;
}

/** A copy of the community AAGUID list as Keyplane keeps it (config/update-authenticator-names.ts writes it). */
export interface AuthenticatorList {
  source: string;
  authenticators: Record<string, AuthenticatorName>;
}

/** Icons above this size (characters of the data: URI) are left out, to keep the committed copy small. */
export const ICON_MAX_CHARS = 4096;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SVG_DATA_URI = /^data:image\/svg\+xml;base64,[A-Za-z0-9+/=]+$/;

/**
 * The community list (`aaguid.json`: `{<aaguid>: {name, icon_light?, icon_dark?}}`) reduced to what
 * Keyplane shows: the name, and the light icon when it is a small base64 SVG data URI. Entries
 * that are not a lowercase UUID with a name are dropped.
 */
export function compactAuthenticatorList(raw: unknown, source: string): AuthenticatorList {
  const authenticators: Record<string, AuthenticatorName> = {};
  if (raw && typeof raw === 'object') {
    for (const [aaguid, entry] of Object.entries(raw as Record<string, unknown>)) {
      const key = aaguid.toLowerCase();
      if (!UUID.test(key) || !entry || typeof entry !== 'object') continue;
      const { name, icon_light: icon } = entry as { name?: unknown; icon_light?: unknown };
      if (typeof name !== 'string' || !name.trim()) continue;
      authenticators[key] = {
        name: name.trim().slice(0, 80),
        ...(typeof icon === 'string' && icon.length <= ICON_MAX_CHARS && SVG_DATA_URI.test(icon) ? { icon } : {}),
      };
    }
  }
  return { source, authenticators };
}

/** Looks AAGUIDs up in the committed list, then in `extra` entries (configured metadata), which win. */
export function authenticatorNames(
  extra: Record<string, AuthenticatorName> = {},
  list: AuthenticatorList = COMMITTED_AUTHENTICATOR_LIST,
): (aaguid: string | null | undefined) => AuthenticatorName | null {
  return (aaguid) => {
    if (!aaguid) return null;
    const key = aaguid.toLowerCase();
    return extra[key] ?? list.authenticators[key] ?? null;
  };
}

/** The committed list's lookup (no configured entries). */
export const authenticatorNameOf = authenticatorNames();

/** A new passkey's label when the person gives none: its authenticator's name, else `Passkey <n>`. */
export function defaultPasskeyLabel(aaguid: string | null | undefined, ordinal: number): string {
  return authenticatorNameOf(aaguid)?.name ?? `Passkey ${ordinal}`;
}
