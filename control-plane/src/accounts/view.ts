import { fail } from '#lib/errors/keyplane-error.js';
import { shouldOfferPasskeyUpgrade } from '#lib/webauthn/passkey-upgrade.js';
import type { AuthenticatorName } from '#lib/webauthn/authenticator-names.js';
import { describeUserAgent, type DeviceDescription } from '#lib/accounts/user-agent.js';
import { effectiveAssurance } from '#lib/assurance/assurance.js';
import { accountExtras, type AccountExtras } from './account-sections.js';
import type { ControlPlaneServices } from '../context.js';
import { rpIdOf, userHandleOf } from '../passkeys/ceremony.js';
import { authenticatorOf, passkeysToReplace } from '../passkeys/policy.js';
import { requiredSsoFor } from '../federation/required-sso.js';
import { standingInvites } from '../orgs/invites.js';
import { listApprovals, type ListedApproval } from '../consent/gate.js';

/** What these functions read. */
export type AccountViewServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'metadata' | 'now'>;

export interface AccountView {
  identityId: string;
  username: string;
  aliases: string[];
  displayName: string;
  preferences: Record<string, string>;
  emails: AccountExtras['emails'];
  passkeys: Array<{
    credId: string;
    label: string;
    createdAt: number;
    lastUsedAt: number | null;
    backedUp: boolean;
    /** The authenticator's AAGUID, null for passkeys registered before it was kept. */
    aaguid: string | null;
    /** Its name and icon from the AAGUID list (docs/passkeys.md#authenticator-names); null when unknown. */
    authenticator: AuthenticatorName | null;
  }>;
  /** Offer this session a passkey (it signed in without one; docs/passkeys.md#upgrades). */
  passkeyUpgrade: boolean;
  /**
   * The account's org requires SSO (docs/federation.md#required-sso): its passkeys only confirm a
   * session its upstream sign-in started, so the offer says so instead of "sign in next time".
   */
  passkeyStepUpOnly: boolean;
  /**
   * Passkeys the org's policy now refuses, working until `graceUntil`: the page asks for another
   * (docs/passkeys.md#org-policy). Null when there are none.
   */
  passkeysToReplace: Awaited<ReturnType<typeof passkeysToReplace>>;
  /** The WebAuthn user handle (base64url), for the page's Signal API calls (docs/passkeys.md#the-signal-api). */
  userHandle: string;
  /** The WebAuthn RP ID the account's passkeys belong to. */
  rpId: string;
  totp: AccountExtras['totp'];
  sessions: Array<
    {
      identifier: string;
      deviceId: string;
      assurance: string;
      /** This very session (the request's). */
      current: boolean;
      /** A session of the browser this request comes from. */
      thisDevice: boolean;
      createdAt: number;
      lastSeenAt: number;
    } & DeviceDescription
  >;
  devices: Array<{ deviceId: string; createdAt: number; lastSeenAt: number; current: boolean } & DeviceDescription>;
  founder: boolean;
  createdAt: number;
  /** The organizations the account belongs to, and open invitations to others (docs/orgs.md). */
  orgs: Array<{ slug: string; name: string; role: string }>;
  invites: Array<{ slug: string; name: string; role: string }>;
  /** The apps and SAML service providers the account approved (docs/security.md "One consent gate"). */
  approvals: ListedApproval[];
}

/** The account as `/account?format=json` lists it (docs/accounts.md#the-account) (plus a few timestamps). Secret-free. */
export async function loadAccountView(
  services: AccountViewServices,
  identityId: string,
  current: { sessionId?: string; deviceId?: string; amr?: readonly string[]; authTime?: number } = {},
): Promise<{ view: AccountView; extras: AccountExtras }> {
  const { storage } = services;
  const now = services.now();
  const identity = await storage.identities.get(identityId);
  if (!identity) throw fail('unauthorized', 'sign in first');
  const [aliases, passkeys, sessions, devices, extras, orgs, invites, approvals] = await Promise.all([
    storage.identities.aliases(identityId),
    storage.credentials.listByIdentity(identityId),
    storage.sessions.listLive(identityId, now),
    storage.devices.list(identityId),
    accountExtras(services, identityId),
    storage.orgs.listForMember(identityId),
    standingInvites(storage.orgs, identityId),
    listApprovals(services, identityId),
  ]);
  const invitedTo = await Promise.all(invites.map((i) => storage.orgs.get(i.orgId)));
  const toReplace = await passkeysToReplace(services, identity);
  const stepUpMs = services.config.lifetimes.stepUp * 1000;
  // A session is named by the browser of its device (the User-Agent kept at its sign-in).
  const userAgents = new Map(devices.map((d) => [d.deviceId, d.userAgent]));
  return {
    extras,
    view: {
      identityId,
      username: identity.username,
      aliases,
      displayName: identity.displayName,
      preferences: identity.preferences,
      emails: extras.emails,
      passkeys: passkeys.map((p) => ({
        credId: p.credId,
        label: p.label,
        createdAt: p.createdAt,
        lastUsedAt: p.lastUsedAt,
        backedUp: p.backedUp,
        aaguid: p.aaguid ?? null,
        authenticator: authenticatorOf(services, p.aaguid),
      })),
      passkeyUpgrade:
        current.amr !== undefined &&
        current.authTime !== undefined &&
        shouldOfferPasskeyUpgrade({
          amr: current.amr,
          authTime: current.authTime,
          passkeysCreatedAt: passkeys.map((p) => p.createdAt),
          declinedAt: identity.passkeyUpgradeDeclinedAt ?? null,
          now,
        }),
      passkeyStepUpOnly: (await requiredSsoFor(storage, identityId)) !== null,
      passkeysToReplace: toReplace,
      userHandle: Buffer.from(userHandleOf(identityId)).toString('base64url'),
      rpId: rpIdOf(services),
      totp: extras.totp,
      sessions: sessions.map((s) => ({
        identifier: s.sessionId,
        deviceId: s.deviceId,
        assurance: effectiveAssurance(s, now, stepUpMs),
        current: s.sessionId === current.sessionId,
        thisDevice: s.deviceId === current.deviceId,
        createdAt: s.createdAt,
        lastSeenAt: s.lastSeenAt,
        ...describeUserAgent(userAgents.get(s.deviceId) ?? null),
      })),
      devices: devices.map((d) => ({
        deviceId: d.deviceId,
        createdAt: d.createdAt,
        lastSeenAt: d.lastSeenAt,
        current: d.deviceId === current.deviceId,
        ...describeUserAgent(d.userAgent),
      })),
      founder: identity.founder,
      createdAt: identity.createdAt,
      orgs: orgs.map((o) => ({ slug: o.slug, name: o.name, role: o.role })),
      invites: invites.flatMap((i, n) =>
        invitedTo[n] ? [{ slug: invitedTo[n]!.slug, name: invitedTo[n]!.name, role: i.role }] : [],
      ),
      approvals,
    },
  };
}
