import type { Rating } from '#lib/scan/rating.js';
import type { OrgRole } from '#lib/orgs/roles.js';
import type { OrgServices, Membership } from './membership.js';
import { listTeams, type TeamView } from './teams.js';

export interface SiteView {
  siteId: string;
  url: string;
  label: string | null;
  primary: boolean;
  verified: boolean;
  rating: Rating | null;
  /** How to prove control of the domain (DNS TXT or the well-known file). */
  proof: { dns: { name: string; type: 'TXT'; value: string }; wellKnown: { url: string; value: string } };
}

export interface OrgView {
  slug: string;
  name: string;
  website: string | null;
  role: OrgRole;
  members: Array<{
    user: string;
    username: string;
    role: OrgRole;
    /** A managed account without a passkey yet (docs/scim.md#a-new-link): whether a link of it is live. */
    enrolment?: { linkLive: boolean };
  }>;
  /** Invites not accepted yet. */
  invites: Array<{ user: string; username: string; role: OrgRole }>;
  sites: SiteView[];
  /** The primary site's Rating: the org's headline. */
  rating: Rating | null;
  /** The org's teams (docs/orgs.md#teams), members by identity id. */
  teams: TeamView[];
}

/** The DNS name and value that prove control of a site's domain (docs/orgs.md "Proving a domain"). */
export function domainProof(site: { url: string; proofToken: string }): SiteView['proof'] {
  const url = new URL(site.url);
  const value = `keyplane-site=${site.proofToken}`;
  return {
    dns: { name: `_keyplane.${url.hostname}`, type: 'TXT', value },
    wellKnown: { url: `${url.origin}/.well-known/keyplane-site.txt`, value },
  };
}

/** The org as `GET /org/{slug}?format=json` shows it to a member. */
export async function loadOrgView(services: OrgServices, m: Membership): Promise<OrgView> {
  const { storage } = services;
  const [members, sites, invites, teams] = await Promise.all([
    storage.orgs.members(m.org.orgId),
    storage.orgs.sites(m.org.orgId),
    storage.orgs.invitesOf(m.org.orgId),
    listTeams(services, m),
  ]);
  const identities = await Promise.all(members.map((x) => storage.identities.get(x.identityId)));
  const invitees = await Promise.all(invites.map((x) => storage.identities.get(x.identityId)));
  const siteViews = await Promise.all(
    sites.map(async (s): Promise<SiteView> => {
      const latest = await storage.scans.latestForSite(s.siteId);
      return {
        siteId: s.siteId,
        url: s.url,
        label: s.label,
        primary: s.primary,
        verified: s.verifiedAt !== null,
        rating: latest ? (JSON.parse(latest.rating) as Rating) : null,
        proof: domainProof(s),
      };
    }),
  );
  return {
    slug: m.org.slug,
    name: m.org.name,
    website: m.org.website,
    role: m.role,
    members: await Promise.all(
      members.map(async (x, i) => {
        const view = { user: x.identityId, username: identities[i]?.username ?? '', role: x.role };
        if (identities[i]?.managedBy !== m.org.orgId || (await storage.credentials.countByIdentity(x.identityId)) > 0)
          return view;
        return { ...view, enrolment: { linkLive: await storage.links.hasLiveEnrolment(x.identityId, services.now()) } };
      }),
    ),
    invites: invites.map((x, i) => ({ user: x.identityId, username: invitees[i]?.username ?? '', role: x.role })),
    sites: siteViews,
    rating: siteViews.find((s) => s.primary)?.rating ?? null,
    teams,
  };
}
