import type { RolloutStore, StoredProject, StoredRolloutDocument } from '../interface.js';
import { changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface RolloutDocumentRow {
  kind: string;
  project: string;
  version: number;
  document: string;
  jws: string;
  hash: string;
  content_hash: string;
  kid: string;
  created_at: number;
}

const rolloutDocumentToRow = (d: StoredRolloutDocument): RolloutDocumentRow => ({
  kind: d.kind,
  project: d.project,
  version: d.version,
  document: JSON.stringify(d.document),
  jws: d.jws,
  hash: d.hash,
  content_hash: d.contentHash,
  kid: d.kid,
  created_at: d.createdAt,
});

const rolloutDocumentFromRow = (row: RolloutDocumentRow): StoredRolloutDocument => ({
  kind: row.kind as StoredRolloutDocument['kind'],
  project: row.project,
  version: Number(row.version),
  document: JSON.parse(row.document),
  jws: row.jws,
  hash: row.hash,
  contentHash: row.content_hash,
  kid: row.kid,
  createdAt: Number(row.created_at),
});

interface ProjectRow {
  project: string;
  client_id: string | null;
  verification: string | null;
  attestation: string | null;
  created_at: number;
  updated_at: number;
}

const projectFromRow = (row: ProjectRow): StoredProject => ({
  project: row.project,
  clientId: row.client_id,
  verification: row.verification === null ? null : JSON.parse(row.verification),
  attestation: row.attestation === null ? null : JSON.parse(row.attestation),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export function rolloutStore(sql: Sql): RolloutStore {
  const project = (name: string) =>
    firstRow(sql, 'SELECT * FROM rollout_projects WHERE project = $1', [name], projectFromRow);
  return {
    insertDocument: (document) =>
      changedOne(
        sql,
        ...insertOf(
          'rollout_documents',
          rolloutDocumentToRow(document),
          'ON CONFLICT (kind, project, version) DO NOTHING',
        ),
      ),
    latestDocument: (kind, name) =>
      firstRow(
        sql,
        'SELECT * FROM rollout_documents WHERE kind = $1 AND project = $2 ORDER BY version DESC LIMIT 1',
        [kind, name],
        rolloutDocumentFromRow,
      ),
    documentHistory: async (kind, name) =>
      (
        await sql.rows<RolloutDocumentRow>(
          'SELECT * FROM rollout_documents WHERE kind = $1 AND project = $2 ORDER BY version DESC',
          [kind, name],
        )
      ).map(rolloutDocumentFromRow),
    ensureProject: async (name, at) => {
      await sql.count(
        'INSERT INTO rollout_projects (project, created_at, updated_at) VALUES ($1, $2, $2) ON CONFLICT (project) DO NOTHING',
        [name, at],
      );
      return (await project(name))!;
    },
    getProject: project,
    projectOfClient: (clientId) =>
      firstRow(sql, 'SELECT * FROM rollout_projects WHERE client_id = $1', [clientId], projectFromRow),
    listProjects: async () =>
      (await sql.rows<ProjectRow>('SELECT * FROM rollout_projects ORDER BY project')).map(projectFromRow),
    // The unique client_id column refuses a client bound to another project; the WHERE keeps an existing binding.
    bindClient: (name, clientId, at) =>
      sql.atomic(async (tx) => {
        const [taken] = await tx.rows<{ project: string }>(
          'SELECT project FROM rollout_projects WHERE client_id = $1 AND project <> $2',
          [clientId, name],
        );
        if (taken) return false;
        return (
          (await tx.count(
            'UPDATE rollout_projects SET client_id = $1, updated_at = $2 WHERE project = $3 AND (client_id IS NULL OR client_id = $1)',
            [clientId, at, name],
          )) === 1
        );
      }),
    recordVerification: async (name, verification, at) => {
      await sql.count('UPDATE rollout_projects SET verification = $1, updated_at = $2 WHERE project = $3', [
        JSON.stringify(verification),
        at,
        name,
      ]);
    },
    recordAttestation: async (name, attestation, at) => {
      await sql.count('UPDATE rollout_projects SET attestation = $1, updated_at = $2 WHERE project = $3', [
        attestation === null ? null : JSON.stringify(attestation),
        at,
        name,
      ]);
    },
  };
}
