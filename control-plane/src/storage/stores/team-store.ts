import type { StoredTeam, TeamMember, TeamMembership, TeamStore } from '../interface.js';
import { changedOne, firstRow, type Sql } from '../sql.js';

interface TeamRow {
  team_id: string;
  org_id: string;
  slug: string;
  display_name: string;
  created_at: number;
  updated_at: number;
}

const teamFromRow = (r: TeamRow): StoredTeam => ({
  teamId: r.team_id,
  orgId: r.org_id,
  slug: r.slug,
  displayName: r.display_name,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

export function teamStore(sql: Sql): TeamStore {
  return {
    create: (team) =>
      changedOne(
        sql,
        `INSERT INTO org_teams (team_id, org_id, slug, display_name, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
        [team.teamId, team.orgId, team.slug, team.displayName, team.createdAt, team.updatedAt],
      ),
    get: (orgId, slug) =>
      firstRow(sql, 'SELECT * FROM org_teams WHERE org_id = $1 AND slug = $2', [orgId, slug], teamFromRow),
    byId: (orgId, teamId) =>
      firstRow(sql, 'SELECT * FROM org_teams WHERE org_id = $1 AND team_id = $2', [orgId, teamId], teamFromRow),
    list: async (orgId) =>
      (await sql.rows<TeamRow>('SELECT * FROM org_teams WHERE org_id = $1 ORDER BY slug', [orgId])).map(teamFromRow),
    rename: (teamId, displayName, at) =>
      changedOne(sql, 'UPDATE org_teams SET display_name = $2, updated_at = $3 WHERE team_id = $1', [
        teamId,
        displayName,
        at,
      ]),
    remove: (teamId) => changedOne(sql, 'DELETE FROM org_teams WHERE team_id = $1', [teamId]),
    members: async (teamId) =>
      (
        await sql.rows<{ identity_id: string; added_at: number }>(
          'SELECT identity_id, added_at FROM org_team_members WHERE team_id = $1 ORDER BY added_at, identity_id',
          [teamId],
        )
      ).map((r): TeamMember => ({ identityId: r.identity_id, addedAt: Number(r.added_at) })),
    managedMembers: async (teamId) =>
      (
        await sql.rows<{ identity_id: string; added_at: number }>(
          `SELECT m.identity_id, m.added_at FROM org_team_members m
           JOIN identities i ON i.identity_id = m.identity_id AND i.managed_by = m.org_id
           WHERE m.team_id = $1 ORDER BY m.added_at, m.identity_id`,
          [teamId],
        )
      ).map((r): TeamMember => ({ identityId: r.identity_id, addedAt: Number(r.added_at) })),
    // Only an org member joins: the EXISTS makes a non-member a quiet no-op rather than a foreign-key error.
    addMember: (team, member) =>
      changedOne(
        sql,
        `INSERT INTO org_team_members (team_id, org_id, identity_id, added_at)
         SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM org_members WHERE org_id = $2 AND identity_id = $3)
         ON CONFLICT DO NOTHING`,
        [team.teamId, team.orgId, member.identityId, member.addedAt],
      ),
    removeMember: (teamId, identityId) =>
      changedOne(sql, 'DELETE FROM org_team_members WHERE team_id = $1 AND identity_id = $2', [teamId, identityId]),
    teamsOf: async (identityId) =>
      (
        await sql.rows<{ org_slug: string; team_slug: string }>(
          `SELECT o.slug AS org_slug, t.slug AS team_slug FROM org_team_members m
           JOIN org_teams t ON t.team_id = m.team_id JOIN orgs o ON o.org_id = t.org_id
           WHERE m.identity_id = $1 ORDER BY o.slug, t.slug`,
          [identityId],
        )
      ).map((r): TeamMembership => ({ orgSlug: r.org_slug, teamSlug: r.team_slug })),
    membershipsIn: async (orgId) =>
      (
        await sql.rows<{ slug: string; identity_id: string }>(
          `SELECT t.slug, m.identity_id FROM org_team_members m JOIN org_teams t ON t.team_id = m.team_id
           WHERE t.org_id = $1 ORDER BY t.slug, m.identity_id`,
          [orgId],
        )
      ).map((r) => ({ teamSlug: r.slug, identityId: r.identity_id })),
  };
}
