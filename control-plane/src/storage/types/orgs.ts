import type { ProviderSettings } from '#lib/saml/provider.js';
import type { PasskeyPolicy, PolicyGrace } from '#lib/webauthn/judge-passkey-policy.js';
import type { KeyState, RecordStore, RingLock } from './accounts.js';

// Organizations, scans, SAML, rollout and contact messages.

// ---- organizations, sites and scans (docs/orgs.md) ----

export type OrgRole = 'member' | 'admin' | 'owner';

export interface StoredOrg {
  orgId: string;
  slug: string;
  name: string;
  website: string | null;
  createdAt: number;
}

export interface OrgMember {
  identityId: string;
  role: OrgRole;
  addedAt: number;
}

export interface OrgSite {
  siteId: string;
  orgId: string;
  /** An https origin plus path, as registered. */
  url: string;
  label: string | null;
  primary: boolean;
  /** The value the org publishes to prove control of the domain (DNS TXT or the well-known file). */
  proofToken: string;
  /** When control of the domain was last proved; null until then. */
  verifiedAt: number | null;
  createdAt: number;
}

export interface OrgInvite {
  orgId: string;
  identityId: string;
  role: OrgRole;
  invitedBy: string;
  createdAt: number;
}

/** A mail domain an org proves by DNS TXT (docs/orgs.md#mail-domains); claimed only once verified. */
export interface OrgMailDomain {
  /** Opaque id (`mdm_…`): receipts name it, never the domain. */
  domainId: string;
  orgId: string;
  /** Lower-case DNS name, exactly as proved (a subdomain is its own entry). */
  domain: string;
  /** The value of the `_keyplane-mail.<domain>` TXT record that proves it. */
  proofToken: string;
  /** When it was proved; null while pending, and again once it lapsed. */
  verifiedAt: number | null;
  /** The last daily re-check (null until the first). */
  checkedAt: number | null;
  /** The first failed re-check of the current run of failures; null while the proof holds. */
  failingSince: number | null;
  createdAt: number;
}

/** An org's passkey policy for its managed accounts (docs/passkeys.md#org-policy), with when it took effect. */
export interface StoredPasskeyPolicy extends PasskeyPolicy, PolicyGrace {
  orgId: string;
  /** The owner who set it. */
  updatedBy: string;
}

export interface OrgStore {
  /** False when the slug is taken. The creator is stored as the first owner. */
  create(org: StoredOrg, ownerId: string): Promise<boolean>;
  getBySlug(slug: string): Promise<StoredOrg | null>;
  get(orgId: string): Promise<StoredOrg | null>;
  /** Every org by slug, `limit` after the slug `after` (the console's list, paged by cursor). */
  listPage(query: { after: string | null; limit: number }): Promise<StoredOrg[]>;
  /** The orgs an identity belongs to, with its role. */
  listForMember(identityId: string): Promise<Array<StoredOrg & { role: OrgRole }>>;
  members(orgId: string): Promise<OrgMember[]>;
  member(orgId: string, identityId: string): Promise<OrgMember | null>;
  /** False when the identity is a member already. */
  addMember(orgId: string, member: OrgMember): Promise<boolean>;
  setRole(orgId: string, identityId: string, role: OrgRole): Promise<boolean>;
  removeMember(orgId: string, identityId: string): Promise<boolean>;
  countOwners(orgId: string): Promise<number>;
  /** One open invite per (org, identity): a new one replaces the old. */
  putInvite(invite: OrgInvite): Promise<void>;
  invitesFor(identityId: string): Promise<OrgInvite[]>;
  /** The org's open invites, oldest first (its dashboard lists them). */
  invitesOf(orgId: string): Promise<OrgInvite[]>;
  /** Removes and returns the invite (atomic: an invite is accepted once). */
  takeInvite(orgId: string, identityId: string): Promise<OrgInvite | null>;
  sites(orgId: string): Promise<OrgSite[]>;
  site(siteId: string): Promise<OrgSite | null>;
  addSite(site: OrgSite): Promise<void>;
  /** Makes `siteId` the org's only primary site; false when it is not the org's. */
  setPrimary(orgId: string, siteId: string): Promise<boolean>;
  removeSite(orgId: string, siteId: string): Promise<boolean>;
  markSiteVerified(siteId: string, at: number): Promise<void>;
  /** Every registered site whose URL has this origin (a seal looks its page's origin up). */
  sitesByOrigin(origin: string): Promise<OrgSite[]>;
  /** Every primary site, for the scheduled rescans. */
  primarySites(): Promise<OrgSite[]>;
  /** False when the org lists this domain already. */
  addMailDomain(domain: OrgMailDomain): Promise<boolean>;
  /** The org's mail domains, proved or pending, by name. */
  mailDomains(orgId: string): Promise<OrgMailDomain[]>;
  mailDomain(orgId: string, domain: string): Promise<OrgMailDomain | null>;
  /**
   * Marks the domain proved at `at`, unless another org holds it proved: false then (the first org
   * to verify a domain holds it; the unique index settles a race).
   */
  claimMailDomain(domainId: string, at: number): Promise<boolean>;
  /** The org's entry that holds `domain` proved, if any. */
  mailDomainHolder(domain: string): Promise<OrgMailDomain | null>;
  /** Which of these domains an org holds proved, and which org (domains no org holds are left out). */
  mailDomainHolders(domains: readonly string[]): Promise<Array<{ domain: string; orgId: string }>>;
  /** Every proved domain last checked before `before` (or never), for the daily re-check. */
  mailDomainsDue(before: number): Promise<OrgMailDomain[]>;
  /** Records a re-check; `lapse` also ends the claim (verified_at back to null). */
  recordMailDomainCheck(domainId: string, at: number, failingSince: number | null, lapse: boolean): Promise<void>;
  removeMailDomain(orgId: string, domainId: string): Promise<boolean>;
  /** The org's passkey policy; null when it never set one. */
  passkeyPolicy(orgId: string): Promise<StoredPasskeyPolicy | null>;
  /** Sets (replaces) the org's passkey policy. */
  putPasskeyPolicy(policy: StoredPasskeyPolicy): Promise<void>;
}

/** A team of an org (docs/orgs.md#teams): `slug` fixed at creation, `displayName` kept as given. */
export interface StoredTeam {
  /** Opaque (`team_…`). */
  teamId: string;
  orgId: string;
  slug: string;
  displayName: string;
  createdAt: number;
  updatedAt: number;
}

export interface TeamMember {
  identityId: string;
  addedAt: number;
}

/** A team membership named as the `groups` claim names it: the org's slug and the team's. */
export interface TeamMembership {
  orgSlug: string;
  teamSlug: string;
}

export interface TeamStore {
  /** False when the org has a team with this slug already. */
  create(team: StoredTeam): Promise<boolean>;
  get(orgId: string, slug: string): Promise<StoredTeam | null>;
  /** The org's team with this id (a SCIM Group's id), or null. */
  byId(orgId: string, teamId: string): Promise<StoredTeam | null>;
  /** The org's teams, by slug. */
  list(orgId: string): Promise<StoredTeam[]>;
  rename(teamId: string, displayName: string, at: number): Promise<boolean>;
  /** Deletes the team and its memberships. */
  remove(teamId: string): Promise<boolean>;
  /** Oldest first. */
  members(teamId: string): Promise<TeamMember[]>;
  /** The members the team's org manages, oldest first (what a SCIM Group shows). */
  managedMembers(teamId: string): Promise<TeamMember[]>;
  /** False when the account is a member already, or no member of the team's org (a team holds only org members). */
  addMember(team: StoredTeam, member: TeamMember): Promise<boolean>;
  removeMember(teamId: string, identityId: string): Promise<boolean>;
  /** Every team the account belongs to, by org slug then team slug. */
  teamsOf(identityId: string): Promise<TeamMembership[]>;
  /** Every team membership in the org (the gateway's member directory), by team slug then identity. */
  membershipsIn(orgId: string): Promise<Array<{ teamSlug: string; identityId: string }>>;
}

export interface StoredScan {
  scanId: string;
  /** The registered site scanned, or null for a public scan. */
  siteId: string | null;
  url: string;
  grade: string;
  score: number;
  /** The signed Rating as served (JSON). */
  rating: string;
  scannedAt: number;
}

export interface ScanStore {
  record(scan: StoredScan): Promise<void>;
  latestForSite(siteId: string): Promise<StoredScan | null>;
  /** The site's scans, newest first. */
  historyForSite(siteId: string, limit: number): Promise<StoredScan[]>;
  /** The newest public scan of exactly this URL. */
  latestPublic(url: string): Promise<StoredScan | null>;
}

// ---- SAML 2.0 identity provider (docs/saml.md) ----

/** The IdP's RSA signing key: state as in the ES256 ring, the private key sealed with the master key. */
export interface StoredSamlKey {
  kid: string;
  state: KeyState;
  certificatePem: string;
  /** PKCS#8 PEM sealed with the master key (AES-256-GCM, bound to the kid). */
  sealedPrivateKey: Buffer;
  createdAt: number;
  activatedAt: number | null;
  retiredAt: number | null;
  /** The certificate's notAfter (ms). */
  notAfter: number;
}

/** A registered service provider (its settings as lib/saml/provider.ts checks them); its certificate is pinned. */
export interface StoredSamlProvider extends ProviderSettings {
  /** Opaque id (`sp_…`). */
  id: string;
  /** The org that owns it, or null for the operator's. */
  orgId: string | null;
  revision: number;
  createdAt: number;
  updatedAt: number;
}

// ---- Rollout: signed trust profiles, migration plans, projects (docs/rollout.md) ----

/** One signed version of a project's trust profile or migration plan; versions are kept as history. */
export interface StoredRolloutDocument {
  kind: 'profile' | 'plan';
  project: string;
  /** 1, 2, …: each new content is the next version; the highest is in force. */
  version: number;
  /** The validated document (what was signed). */
  document: Record<string, unknown>;
  /** The compact JWS the control plane signed. */
  jws: string;
  /** SHA-256 hex of the JWS. */
  hash: string;
  /** SHA-256 hex of the document's RFC 8785 form: the same content is never signed twice. */
  contentHash: string;
  kid: string;
  createdAt: number;
}

/** The outcome of `keyplane rollout verify`, as recorded. */
export interface RolloutVerification {
  passed: boolean;
  at: number;
  profileVersion: number;
  /** The declared gateway config hash when it was verified (null without a gateway). */
  configHash: string | null;
  checks: Array<{ name: string; ok: boolean; detail: string }>;
}

export interface RolloutAttestation {
  jws: string;
  hash: string;
  at: number;
  profileVersion: number;
  configVersion: number;
  configHash: string;
}

export interface StoredProject {
  project: string;
  /** The client registered for the project, once `register` ran. */
  clientId: string | null;
  verification: RolloutVerification | null;
  attestation: RolloutAttestation | null;
  createdAt: number;
  updatedAt: number;
}

export interface SamlStore extends RingLock {
  keys(): Promise<StoredSamlKey[]>;
  insertKey(key: StoredSamlKey): Promise<void>;
  setKeyState(kid: string, state: KeyState, at: number): Promise<void>;
  removeKey(kid: string): Promise<void>;
  /** False when the entityID is registered already. */
  insertProvider(provider: StoredSamlProvider): Promise<boolean>;
  provider(id: string): Promise<StoredSamlProvider | null>;
  providerByEntityId(entityId: string): Promise<StoredSamlProvider | null>;
  /** Every provider (orgId undefined), or those of the listed orgs; oldest first. */
  listProviders(orgIds?: string[]): Promise<StoredSamlProvider[]>;
  /** Conditional on `revision`: null when the stored revision differs (or the entityID is taken). */
  updateProvider(provider: StoredSamlProvider, revision: number): Promise<StoredSamlProvider | null | 'taken'>;
  removeProvider(id: string): Promise<boolean>;
}

export interface RolloutStore {
  /** False when this kind, project and version exist already (two signers raced). */
  insertDocument(document: StoredRolloutDocument): Promise<boolean>;
  latestDocument(kind: StoredRolloutDocument['kind'], project: string): Promise<StoredRolloutDocument | null>;
  /** Every version, newest first. */
  documentHistory(kind: StoredRolloutDocument['kind'], project: string): Promise<StoredRolloutDocument[]>;
  /** Creates the project record when it is missing; returns it either way. */
  ensureProject(project: string, at: number): Promise<StoredProject>;
  getProject(project: string): Promise<StoredProject | null>;
  projectOfClient(clientId: string): Promise<StoredProject | null>;
  listProjects(): Promise<StoredProject[]>;
  /** Binds the client when the project has none or the same one; false otherwise (and for a client bound elsewhere). */
  bindClient(project: string, clientId: string, at: number): Promise<boolean>;
  recordVerification(project: string, verification: RolloutVerification, at: number): Promise<void>;
  recordAttestation(project: string, attestation: RolloutAttestation | null, at: number): Promise<void>;
}

/** A message sent through the contact channel (docs/contact.md). */
export interface StoredContact {
  /** `ctc_` and 128 random bits, base64url. */
  contactId: string;
  email: string;
  topic: string;
  message: string;
  createdAt: number;
  /** When the operator's copy went out; null until then (or with no operator address set). */
  mailedAt: number | null;
}

export interface ContactStore extends RecordStore<StoredContact> {
  /** Records that the operator's copy went out; true for the first call only. */
  markMailed(contactId: string, at: number): Promise<boolean>;
  /** Deletes messages received before `before`; returns how many. */
  purgeBefore(before: number): Promise<number>;
}
