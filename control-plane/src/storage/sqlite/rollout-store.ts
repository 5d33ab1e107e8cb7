import {
  projectFromRow,
  rolloutDocumentFromRow,
  rolloutDocumentToRow,
  type ProjectRow,
  type RolloutDocumentRow,
} from '../rows.js';
import type { RolloutStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';

export function sqliteRolloutStore(runner: Runner): RolloutStore {
  const project = (name: string) =>
    runner.run((db) => {
      const row = cached(db, 'SELECT * FROM rollout_projects WHERE project = ?').get(name) as ProjectRow | undefined;
      return row ? projectFromRow(row) : null;
    });
  return {
    insertDocument: (document) =>
      runner.run(
        (db) =>
          cached(
            db,
            `INSERT INTO rollout_documents (kind, project, version, document, jws, hash, content_hash, kid, created_at)
           VALUES (@kind, @project, @version, @document, @jws, @hash, @content_hash, @kid, @created_at)
           ON CONFLICT (kind, project, version) DO NOTHING`,
          ).run(rolloutDocumentToRow(document)).changes === 1,
      ),
    latestDocument: (kind, name) =>
      runner.run((db) => {
        const row = cached(
          db,
          'SELECT * FROM rollout_documents WHERE kind = ? AND project = ? ORDER BY version DESC LIMIT 1',
        ).get(kind, name) as RolloutDocumentRow | undefined;
        return row ? rolloutDocumentFromRow(row) : null;
      }),
    documentHistory: (kind, name) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM rollout_documents WHERE kind = ? AND project = ? ORDER BY version DESC').all(
            kind,
            name,
          ) as RolloutDocumentRow[]
        ).map(rolloutDocumentFromRow),
      ),
    ensureProject: async (name, at) => {
      await runner.run((db) =>
        cached(
          db,
          'INSERT INTO rollout_projects (project, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT (project) DO NOTHING',
        ).run(name, at, at),
      );
      return (await project(name))!;
    },
    getProject: project,
    projectOfClient: (clientId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM rollout_projects WHERE client_id = ?').get(clientId) as
          ProjectRow | undefined;
        return row ? projectFromRow(row) : null;
      }),
    listProjects: () =>
      runner.run((db) =>
        (cached(db, 'SELECT * FROM rollout_projects ORDER BY project').all() as ProjectRow[]).map(projectFromRow),
      ),
    bindClient: (name, clientId, at) =>
      runner.run((db) => {
        const taken = cached(db, 'SELECT project FROM rollout_projects WHERE client_id = ? AND project <> ?').get(
          clientId,
          name,
        );
        if (taken) return false;
        return (
          cached(
            db,
            'UPDATE rollout_projects SET client_id = ?, updated_at = ? WHERE project = ? AND (client_id IS NULL OR client_id = ?)',
          ).run(clientId, at, name, clientId).changes === 1
        );
      }),
    recordVerification: async (name, verification, at) => {
      await runner.run((db) =>
        cached(db, 'UPDATE rollout_projects SET verification = ?, updated_at = ? WHERE project = ?').run(
          JSON.stringify(verification),
          at,
          name,
        ),
      );
    },
    recordAttestation: async (name, attestation, at) => {
      await runner.run((db) =>
        cached(db, 'UPDATE rollout_projects SET attestation = ?, updated_at = ? WHERE project = ?').run(
          attestation === null ? null : JSON.stringify(attestation),
          at,
          name,
        ),
      );
    },
  };
}
