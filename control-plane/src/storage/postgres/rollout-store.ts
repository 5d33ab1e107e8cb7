import {
  projectFromRow,
  rolloutDocumentFromRow,
  rolloutDocumentToRow,
  type ProjectRow,
  type RolloutDocumentRow,
} from '../rows.js';
import type { RolloutStore } from '../types.js';
import { insertOf, type Sql } from './sql.js';

export function postgresRolloutStore(sql: Sql): RolloutStore {
  const project = async (name: string) => {
    const [row] = await sql.rows<ProjectRow>('SELECT * FROM rollout_projects WHERE project = $1', [name]);
    return row ? projectFromRow(row) : null;
  };
  return {
    insertDocument: async (document) =>
      (await sql.count(
        ...insertOf(
          'rollout_documents',
          rolloutDocumentToRow(document),
          'ON CONFLICT (kind, project, version) DO NOTHING',
        ),
      )) === 1,
    latestDocument: async (kind, name) => {
      const [row] = await sql.rows<RolloutDocumentRow>(
        'SELECT * FROM rollout_documents WHERE kind = $1 AND project = $2 ORDER BY version DESC LIMIT 1',
        [kind, name],
      );
      return row ? rolloutDocumentFromRow(row) : null;
    },
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
    projectOfClient: async (clientId) => {
      const [row] = await sql.rows<ProjectRow>('SELECT * FROM rollout_projects WHERE client_id = $1', [clientId]);
      return row ? projectFromRow(row) : null;
    },
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
