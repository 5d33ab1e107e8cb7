import type { OrgRole, OrgStore, ScanStore } from '../types.js';
import {
  inviteFromRow,
  memberFromRow,
  orgFromRow,
  scanFromRow,
  siteFromRow,
  type InviteRow,
  type MemberRow,
  type OrgRow,
  type ScanRow,
  type SiteRow,
} from '../rows.js';
import { cached, type Runner } from './serial-runner.js';

export function sqliteOrgStore(runner: Runner): OrgStore {
  return {
    create: (org, ownerId) =>
      runner.run((db) => {
        const inserted =
          cached(
            db,
            'INSERT INTO orgs (org_id, slug, name, website, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
          ).run(org.orgId, org.slug, org.name, org.website, org.createdAt).changes === 1;
        if (inserted)
          cached(db, "INSERT INTO org_members (org_id, identity_id, role, added_at) VALUES (?, ?, 'owner', ?)").run(
            org.orgId,
            ownerId,
            org.createdAt,
          );
        return inserted;
      }),
    getBySlug: (slug) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM orgs WHERE slug = ?').get(slug) as OrgRow | undefined;
        return row ? orgFromRow(row) : null;
      }),
    get: (orgId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM orgs WHERE org_id = ?').get(orgId) as OrgRow | undefined;
        return row ? orgFromRow(row) : null;
      }),
    listForMember: (identityId) =>
      runner.run((db) =>
        (
          cached(
            db,
            'SELECT o.*, m.role FROM orgs o JOIN org_members m ON m.org_id = o.org_id WHERE m.identity_id = ? ORDER BY o.slug',
          ).all(identityId) as Array<OrgRow & { role: OrgRole }>
        ).map((r) => ({ ...orgFromRow(r), role: r.role })),
      ),
    members: (orgId) =>
      runner.run((db) =>
        (
          cached(
            db,
            'SELECT identity_id, role, added_at FROM org_members WHERE org_id = ? ORDER BY added_at, identity_id',
          ).all(orgId) as MemberRow[]
        ).map(memberFromRow),
      ),
    member: (orgId, identityId) =>
      runner.run((db) => {
        const row = cached(
          db,
          'SELECT identity_id, role, added_at FROM org_members WHERE org_id = ? AND identity_id = ?',
        ).get(orgId, identityId) as MemberRow | undefined;
        return row ? memberFromRow(row) : null;
      }),
    addMember: (orgId, m) =>
      runner.run(
        (db) =>
          cached(
            db,
            'INSERT INTO org_members (org_id, identity_id, role, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
          ).run(orgId, m.identityId, m.role, m.addedAt).changes === 1,
      ),
    setRole: (orgId, identityId, role) =>
      runner.run(
        (db) =>
          cached(db, 'UPDATE org_members SET role = ? WHERE org_id = ? AND identity_id = ?').run(
            role,
            orgId,
            identityId,
          ).changes === 1,
      ),
    removeMember: (orgId, identityId) =>
      runner.run(
        (db) =>
          cached(db, 'DELETE FROM org_members WHERE org_id = ? AND identity_id = ?').run(orgId, identityId).changes ===
          1,
      ),
    countOwners: (orgId) =>
      runner.run(
        (db) =>
          (
            cached(db, "SELECT COUNT(*) AS n FROM org_members WHERE org_id = ? AND role = 'owner'").get(orgId) as {
              n: number;
            }
          ).n,
      ),
    putInvite: (invite) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO org_invites (org_id, identity_id, role, invited_by, created_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (org_id, identity_id) DO UPDATE SET role = excluded.role, invited_by = excluded.invited_by, created_at = excluded.created_at`,
        ).run(invite.orgId, invite.identityId, invite.role, invite.invitedBy, invite.createdAt);
      }),
    invitesFor: (identityId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM org_invites WHERE identity_id = ? ORDER BY created_at').all(
            identityId,
          ) as InviteRow[]
        ).map(inviteFromRow),
      ),
    invitesOf: (orgId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM org_invites WHERE org_id = ? ORDER BY created_at, identity_id').all(
            orgId,
          ) as InviteRow[]
        ).map(inviteFromRow),
      ),
    takeInvite: (orgId, identityId) =>
      runner.run((db) => {
        const row = cached(db, 'DELETE FROM org_invites WHERE org_id = ? AND identity_id = ? RETURNING *').get(
          orgId,
          identityId,
        ) as InviteRow | undefined;
        return row ? inviteFromRow(row) : null;
      }),
    sites: (orgId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM org_sites WHERE org_id = ? ORDER BY created_at, site_id').all(orgId) as SiteRow[]
        ).map(siteFromRow),
      ),
    site: (siteId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM org_sites WHERE site_id = ?').get(siteId) as SiteRow | undefined;
        return row ? siteFromRow(row) : null;
      }),
    addSite: (site) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO org_sites (site_id, org_id, url, origin, label, is_primary, proof_token, verified_at, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          site.siteId,
          site.orgId,
          site.url,
          new URL(site.url).origin,
          site.label,
          site.primary ? 1 : 0,
          site.proofToken,
          site.verifiedAt,
          site.createdAt,
        );
      }),
    setPrimary: (orgId, siteId) =>
      runner.run((db) => {
        const exists = cached(db, 'SELECT 1 FROM org_sites WHERE org_id = ? AND site_id = ?').get(orgId, siteId);
        if (!exists) return false;
        cached(db, 'UPDATE org_sites SET is_primary = 0 WHERE org_id = ? AND is_primary = 1').run(orgId);
        cached(db, 'UPDATE org_sites SET is_primary = 1 WHERE site_id = ?').run(siteId);
        return true;
      }),
    removeSite: (orgId, siteId) =>
      runner.run(
        (db) => cached(db, 'DELETE FROM org_sites WHERE org_id = ? AND site_id = ?').run(orgId, siteId).changes === 1,
      ),
    markSiteVerified: (siteId, at) =>
      runner.run((db) => {
        cached(db, 'UPDATE org_sites SET verified_at = ? WHERE site_id = ?').run(at, siteId);
      }),
    sitesByOrigin: (origin) =>
      runner.run((db) =>
        (cached(db, 'SELECT * FROM org_sites WHERE origin = ? ORDER BY created_at').all(origin) as SiteRow[]).map(
          siteFromRow,
        ),
      ),
    primarySites: () =>
      runner.run((db) =>
        (cached(db, 'SELECT * FROM org_sites WHERE is_primary = 1 ORDER BY site_id').all() as SiteRow[]).map(
          siteFromRow,
        ),
      ),
  };
}

export function sqliteScanStore(runner: Runner): ScanStore {
  return {
    record: (scan) =>
      runner.run((db) => {
        cached(
          db,
          'INSERT INTO scans (scan_id, site_id, url, grade, score, rating, scanned_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        ).run(scan.scanId, scan.siteId, scan.url, scan.grade, scan.score, scan.rating, scan.scannedAt);
      }),
    latestForSite: (siteId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM scans WHERE site_id = ? ORDER BY scanned_at DESC, scan_id LIMIT 1').get(
          siteId,
        ) as ScanRow | undefined;
        return row ? scanFromRow(row) : null;
      }),
    historyForSite: (siteId, limit) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM scans WHERE site_id = ? ORDER BY scanned_at DESC, scan_id LIMIT ?').all(
            siteId,
            limit,
          ) as ScanRow[]
        ).map(scanFromRow),
      ),
    latestPublic: (url) =>
      runner.run((db) => {
        const row = cached(
          db,
          'SELECT * FROM scans WHERE site_id IS NULL AND url = ? ORDER BY scanned_at DESC, scan_id LIMIT 1',
        ).get(url) as ScanRow | undefined;
        return row ? scanFromRow(row) : null;
      }),
  };
}
