import type {
  OrgMailDomain,
  OrgInvite,
  OrgMember,
  OrgRole,
  OrgSite,
  OrgStore,
  ScanStore,
  StoredOrg,
  StoredPasskeyPolicy,
  StoredScan,
} from '../interface.js';
import { changedOne, firstRow, type Sql } from '../sql.js';

interface OrgRow {
  org_id: string;
  slug: string;
  name: string;
  website: string | null;
  created_at: number;
}

interface PasskeyPolicyRow {
  org_id: string;
  aaguids_allowed: string;
  aaguids_denied: string;
  attestation: 'none' | 'required';
  effective_at: number | string;
  grace_until: number | string;
  updated_by: string;
}

const passkeyPolicyFromRow = (row: PasskeyPolicyRow): StoredPasskeyPolicy => ({
  orgId: row.org_id,
  aaguidsAllowed: JSON.parse(row.aaguids_allowed) as string[],
  aaguidsDenied: JSON.parse(row.aaguids_denied) as string[],
  attestation: row.attestation,
  effectiveAt: Number(row.effective_at),
  graceUntil: Number(row.grace_until),
  updatedBy: row.updated_by,
});

interface MemberRow {
  identity_id: string;
  role: OrgRole;
  added_at: number;
}

interface InviteRow {
  org_id: string;
  identity_id: string;
  role: OrgRole;
  invited_by: string;
  created_at: number;
}

interface SiteRow {
  site_id: string;
  org_id: string;
  url: string;
  origin: string;
  label: string | null;
  is_primary: number;
  proof_token: string;
  verified_at: number | null;
  created_at: number;
}

interface ScanRow {
  scan_id: string;
  site_id: string | null;
  url: string;
  grade: string;
  score: number;
  rating: string;
  scanned_at: number;
}

const orgFromRow = (r: OrgRow): StoredOrg => ({
  orgId: r.org_id,
  slug: r.slug,
  name: r.name,
  website: r.website,
  createdAt: r.created_at,
});

const memberFromRow = (r: MemberRow): OrgMember => ({
  identityId: r.identity_id,
  role: r.role,
  addedAt: r.added_at,
});

const inviteFromRow = (r: InviteRow): OrgInvite => ({
  orgId: r.org_id,
  identityId: r.identity_id,
  role: r.role,
  invitedBy: r.invited_by,
  createdAt: r.created_at,
});

const siteFromRow = (r: SiteRow): OrgSite => ({
  siteId: r.site_id,
  orgId: r.org_id,
  url: r.url,
  label: r.label,
  primary: r.is_primary === 1,
  proofToken: r.proof_token,
  verifiedAt: r.verified_at,
  createdAt: r.created_at,
});

interface MailDomainRow {
  domain_id: string;
  org_id: string;
  domain: string;
  proof_token: string;
  verified_at: number | null;
  checked_at: number | null;
  failing_since: number | null;
  created_at: number;
}

const mailDomainFromRow = (r: MailDomainRow): OrgMailDomain => ({
  domainId: r.domain_id,
  orgId: r.org_id,
  domain: r.domain,
  proofToken: r.proof_token,
  verifiedAt: r.verified_at === null ? null : Number(r.verified_at),
  checkedAt: r.checked_at === null ? null : Number(r.checked_at),
  failingSince: r.failing_since === null ? null : Number(r.failing_since),
  createdAt: Number(r.created_at),
});

const scanFromRow = (r: ScanRow): StoredScan => ({
  scanId: r.scan_id,
  siteId: r.site_id,
  url: r.url,
  grade: r.grade,
  score: r.score,
  rating: r.rating,
  scannedAt: r.scanned_at,
});

export function orgStore(sql: Sql): OrgStore {
  const SITE_LOCKED = `SELECT 1 FROM org_sites WHERE org_id = $1 AND site_id = $2 ${sql.dialect.forUpdate}`;
  return {
    // The org and its first owner together, or neither (a taken slug inserts nothing).
    create: (org, ownerId) =>
      sql.atomic(async (tx) => {
        const inserted =
          (await tx.count(
            'INSERT INTO orgs (org_id, slug, name, website, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
            [org.orgId, org.slug, org.name, org.website, org.createdAt],
          )) === 1;
        if (inserted)
          await tx.count("INSERT INTO org_members (org_id, identity_id, role, added_at) VALUES ($1, $2, 'owner', $3)", [
            org.orgId,
            ownerId,
            org.createdAt,
          ]);
        return inserted;
      }),
    getBySlug: (slug) => firstRow(sql, 'SELECT * FROM orgs WHERE slug = $1', [slug], orgFromRow),
    get: (orgId) => firstRow(sql, 'SELECT * FROM orgs WHERE org_id = $1', [orgId], orgFromRow),
    // A range on the unique slug index.
    listPage: async ({ after, limit }) =>
      (await sql.rows<OrgRow>('SELECT * FROM orgs WHERE slug > $1 ORDER BY slug LIMIT $2', [after ?? '', limit])).map(
        orgFromRow,
      ),
    listForMember: async (identityId) =>
      (
        await sql.rows<OrgRow & { role: OrgRole }>(
          'SELECT o.*, m.role FROM orgs o JOIN org_members m ON m.org_id = o.org_id WHERE m.identity_id = $1 ORDER BY o.slug',
          [identityId],
        )
      ).map((r) => ({ ...orgFromRow(r), role: r.role })),
    members: async (orgId) =>
      (
        await sql.rows<MemberRow>(
          'SELECT identity_id, role, added_at FROM org_members WHERE org_id = $1 ORDER BY added_at, identity_id',
          [orgId],
        )
      ).map(memberFromRow),
    member: (orgId, identityId) =>
      firstRow(
        sql,
        'SELECT identity_id, role, added_at FROM org_members WHERE org_id = $1 AND identity_id = $2',
        [orgId, identityId],
        memberFromRow,
      ),
    addMember: (orgId, m) =>
      changedOne(
        sql,
        'INSERT INTO org_members (org_id, identity_id, role, added_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
        [orgId, m.identityId, m.role, m.addedAt],
      ),
    setRole: (orgId, identityId, role) =>
      changedOne(sql, 'UPDATE org_members SET role = $3 WHERE org_id = $1 AND identity_id = $2', [
        orgId,
        identityId,
        role,
      ]),
    removeMember: (orgId, identityId) =>
      changedOne(sql, 'DELETE FROM org_members WHERE org_id = $1 AND identity_id = $2', [orgId, identityId]),
    countOwners: async (orgId) => {
      const [row] = await sql.rows<{ n: number }>(
        "SELECT COUNT(*) AS n FROM org_members WHERE org_id = $1 AND role = 'owner'",
        [orgId],
      );
      return Number(row?.n ?? 0);
    },
    putInvite: async (invite) => {
      await sql.count(
        `INSERT INTO org_invites (org_id, identity_id, role, invited_by, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (org_id, identity_id) DO UPDATE SET role = excluded.role, invited_by = excluded.invited_by, created_at = excluded.created_at`,
        [invite.orgId, invite.identityId, invite.role, invite.invitedBy, invite.createdAt],
      );
    },
    invitesFor: async (identityId) =>
      (
        await sql.rows<InviteRow>('SELECT * FROM org_invites WHERE identity_id = $1 ORDER BY created_at', [identityId])
      ).map(inviteFromRow),
    invitesOf: async (orgId) =>
      (
        await sql.rows<InviteRow>('SELECT * FROM org_invites WHERE org_id = $1 ORDER BY created_at, identity_id', [
          orgId,
        ])
      ).map(inviteFromRow),
    // DELETE … RETURNING: an invite is accepted once even when two replicas race.
    takeInvite: (orgId, identityId) =>
      firstRow(
        sql,
        'DELETE FROM org_invites WHERE org_id = $1 AND identity_id = $2 RETURNING *',
        [orgId, identityId],
        inviteFromRow,
      ),
    sites: async (orgId) =>
      (await sql.rows<SiteRow>('SELECT * FROM org_sites WHERE org_id = $1 ORDER BY created_at, site_id', [orgId])).map(
        siteFromRow,
      ),
    site: (siteId) => firstRow(sql, 'SELECT * FROM org_sites WHERE site_id = $1', [siteId], siteFromRow),
    addSite: async (site) => {
      await sql.count(
        `INSERT INTO org_sites (site_id, org_id, url, origin, label, is_primary, proof_token, verified_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          site.siteId,
          site.orgId,
          site.url,
          new URL(site.url).origin,
          site.label,
          site.primary ? 1 : 0,
          site.proofToken,
          site.verifiedAt,
          site.createdAt,
        ],
      );
    },
    // Clearing the old primary and setting the new one in one transaction keeps the
    // one-primary-per-org unique index satisfied at every statement.
    setPrimary: (orgId, siteId) =>
      sql.atomic(async (tx) => {
        const exists = await tx.rows(SITE_LOCKED, [orgId, siteId]);
        if (exists.length === 0) return false;
        await tx.count('UPDATE org_sites SET is_primary = 0 WHERE org_id = $1 AND is_primary = 1', [orgId]);
        await tx.count('UPDATE org_sites SET is_primary = 1 WHERE site_id = $1', [siteId]);
        return true;
      }),
    removeSite: (orgId, siteId) =>
      changedOne(sql, 'DELETE FROM org_sites WHERE org_id = $1 AND site_id = $2', [orgId, siteId]),
    markSiteVerified: async (siteId, at) => {
      await sql.count('UPDATE org_sites SET verified_at = $2 WHERE site_id = $1', [siteId, at]);
    },
    sitesByOrigin: async (origin) =>
      (await sql.rows<SiteRow>('SELECT * FROM org_sites WHERE origin = $1 ORDER BY created_at', [origin])).map(
        siteFromRow,
      ),
    primarySites: async () =>
      (await sql.rows<SiteRow>('SELECT * FROM org_sites WHERE is_primary = 1 ORDER BY site_id')).map(siteFromRow),
    addMailDomain: (d) =>
      changedOne(
        sql,
        `INSERT INTO org_mail_domains (domain_id, org_id, domain, proof_token, verified_at, checked_at, failing_since, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
        [d.domainId, d.orgId, d.domain, d.proofToken, d.verifiedAt, d.checkedAt, d.failingSince, d.createdAt],
      ),
    passkeyPolicy: (orgId) =>
      firstRow(sql, 'SELECT * FROM org_passkey_policies WHERE org_id = $1', [orgId], passkeyPolicyFromRow),
    putPasskeyPolicy: async (p) => {
      await sql.count(
        `INSERT INTO org_passkey_policies (org_id, aaguids_allowed, aaguids_denied, attestation, effective_at, grace_until, updated_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (org_id) DO UPDATE SET aaguids_allowed = $2, aaguids_denied = $3, attestation = $4,
           effective_at = $5, grace_until = $6, updated_by = $7`,
        [
          p.orgId,
          JSON.stringify(p.aaguidsAllowed),
          JSON.stringify(p.aaguidsDenied),
          p.attestation,
          p.effectiveAt,
          p.graceUntil,
          p.updatedBy,
        ],
      );
    },
    mailDomains: async (orgId) =>
      (await sql.rows<MailDomainRow>('SELECT * FROM org_mail_domains WHERE org_id = $1 ORDER BY domain', [orgId])).map(
        mailDomainFromRow,
      ),
    mailDomain: (orgId, domain) =>
      firstRow(
        sql,
        'SELECT * FROM org_mail_domains WHERE org_id = $1 AND domain = $2',
        [orgId, domain],
        mailDomainFromRow,
      ),
    // One statement: the NOT EXISTS answers the usual case, the partial unique index a race.
    claimMailDomain: async (domainId, at) => {
      try {
        return await changedOne(
          sql,
          `UPDATE org_mail_domains SET verified_at = $2, checked_at = $2, failing_since = NULL
           WHERE domain_id = $1 AND NOT EXISTS (
             SELECT 1 FROM org_mail_domains other
             WHERE other.domain = org_mail_domains.domain AND other.verified_at IS NOT NULL AND other.domain_id <> $1)`,
          [domainId, at],
        );
      } catch (error) {
        if (sql.dialect.isUniqueViolation(error)) return false;
        throw error;
      }
    },
    mailDomainHolder: (domain) =>
      firstRow(
        sql,
        'SELECT * FROM org_mail_domains WHERE domain = $1 AND verified_at IS NOT NULL',
        [domain],
        mailDomainFromRow,
      ),
    mailDomainHolders: async (domains) =>
      domains.length === 0
        ? []
        : (
            await sql.rows<{ domain: string; org_id: string }>(
              `SELECT domain, org_id FROM org_mail_domains WHERE verified_at IS NOT NULL AND ${sql.dialect.inList('domain', '$1')}`,
              [sql.dialect.list([...domains])],
            )
          ).map((r) => ({ domain: r.domain, orgId: r.org_id })),
    mailDomainsDue: async (before) =>
      (
        await sql.rows<MailDomainRow>(
          `SELECT * FROM org_mail_domains WHERE verified_at IS NOT NULL AND (checked_at IS NULL OR checked_at < $1)
           ORDER BY domain_id`,
          [before],
        )
      ).map(mailDomainFromRow),
    recordMailDomainCheck: async (domainId, at, failingSince, lapse) => {
      await sql.count(
        `UPDATE org_mail_domains SET checked_at = $2, failing_since = $3,
         verified_at = CASE WHEN $4 = 1 THEN NULL ELSE verified_at END WHERE domain_id = $1`,
        [domainId, at, failingSince, lapse ? 1 : 0],
      );
    },
    removeMailDomain: (orgId, domainId) =>
      changedOne(sql, 'DELETE FROM org_mail_domains WHERE org_id = $1 AND domain_id = $2', [orgId, domainId]),
  };
}

export function scanStore(sql: Sql): ScanStore {
  return {
    record: async (scan) => {
      await sql.count(
        'INSERT INTO scans (scan_id, site_id, url, grade, score, rating, scanned_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [scan.scanId, scan.siteId, scan.url, scan.grade, scan.score, scan.rating, scan.scannedAt],
      );
    },
    latestForSite: (siteId) =>
      firstRow(
        sql,
        'SELECT * FROM scans WHERE site_id = $1 ORDER BY scanned_at DESC, scan_id LIMIT 1',
        [siteId],
        scanFromRow,
      ),
    historyForSite: async (siteId, limit) =>
      (
        await sql.rows<ScanRow>('SELECT * FROM scans WHERE site_id = $1 ORDER BY scanned_at DESC, scan_id LIMIT $2', [
          siteId,
          limit,
        ])
      ).map(scanFromRow),
    latestPublic: (url) =>
      firstRow(
        sql,
        'SELECT * FROM scans WHERE site_id IS NULL AND url = $1 ORDER BY scanned_at DESC, scan_id LIMIT 1',
        [url],
        scanFromRow,
      ),
  };
}
