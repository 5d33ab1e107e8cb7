import { fail } from '#lib/errors/keyplane-error.js';
import type { TrustProfile } from '#lib/profiles/documents.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient, StoredGatewayEvidence } from '../storage/interface.js';
import { projectState, type ProjectState } from './projects.js';

/** Who reads the rollout truth: the operator (admin token, or the founder's session) sees every project. */
export type Viewer = { operator: true } | { operator: false; identityId: string };

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/** Where the project is in the flow: the furthest step it has reached. */
function stageOf(state: ProjectState): string {
  if (!state.client) return 'classified';
  if (state.project.attestation && state.client.metadata.gateway?.mode === 'enforce') return 'attested';
  if (state.client.metadata.gateway?.mode === 'canary') return 'canary';
  if (state.project.verification?.passed && state.project.verification.profileVersion === state.profile.version)
    return 'verified';
  return 'registered';
}

function describeEvidence(report: StoredGatewayEvidence, now: number) {
  return {
    instance: report.instance,
    gateway: report.gateway,
    issued_at: iso(report.issuedAt),
    received_at: iso(report.receivedAt),
    expires_at: iso(report.expiresAt),
    fresh: now < report.expiresAt,
    age_seconds: Math.max(0, Math.round((now - report.issuedAt) / 1000)),
    config: report.config,
    counts: report.counts,
    last_enforcement_at: iso(report.lastEnforcementAt),
  };
}

function describeRegistration(client: StoredClient) {
  const { metadata } = client;
  return {
    client_id: client.clientId,
    revision: client.revision,
    client_name: metadata.client_name ?? null,
    redirect_uris: metadata.redirect_uris,
    resources: metadata.resources,
    access: metadata.access,
    gateway: metadata.gateway ?? null,
  };
}

/** One project's row of the rollout truth: declared and observed apart, then the verdict. */
export function describeRollout(state: ProjectState) {
  const profile = state.profile.document as unknown as TrustProfile;
  const declared = state.enforcement?.declared ?? null;
  const now = state.enforcement?.now ?? Date.now();
  const reports = state.enforcement?.observed ?? [];
  const newest = reports[0];
  return {
    project: state.project.project,
    client_id: state.client?.clientId ?? null,
    stage: stageOf(state),
    declared: {
      profile_version: state.profile.version,
      exposure: profile.exposure,
      data_class: profile.data_class,
      required_assurance: profile.required_assurance,
      principals: profile.principals,
      mode: declared?.policy.mode ?? null,
      canary_percent: declared?.policy.canary_percent ?? null,
      config_version: declared?.version ?? null,
      config_hash: declared?.hash ?? null,
      attested_at: iso(state.project.attestation?.at),
    },
    observed: {
      instances: reports.length,
      fresh_instances: reports.filter((report) => now < report.expiresAt).length,
      last_evidence_at: iso(newest?.issuedAt),
      age_seconds: newest ? Math.max(0, Math.round((now - newest.issuedAt) / 1000)) : null,
      config_version: newest?.config?.version ?? null,
      config_hash: newest?.config?.hash ?? null,
      mode: newest?.config?.mode ?? null,
    },
    status: state.status,
    reason: state.reason,
  };
}

/** The project's slice: its signed profile (and plan), registration, gateway policy, evidence and enforcement status. */
export function describeSlice(state: ProjectState) {
  const now = state.enforcement?.now ?? Date.now();
  const signed = (document: ProjectState['profile']) => ({
    version: document.version,
    hash: document.hash,
    signed_at: iso(document.createdAt),
    kid: document.kid,
    jws: document.jws,
    document: document.document,
  });
  return {
    ...describeRollout(state),
    profile: signed(state.profile),
    plan: state.plan ? signed(state.plan) : null,
    registration: state.client ? describeRegistration(state.client) : null,
    gateway_policy: state.enforcement?.declared
      ? {
          version: state.enforcement.declared.version,
          hash: state.enforcement.declared.hash,
          policy: state.enforcement.declared.policy,
          issued_at: iso(state.enforcement.declared.issuedAt),
        }
      : null,
    evidence: (state.enforcement?.observed ?? []).map((report) => describeEvidence(report, now)),
    verification: state.project.verification
      ? { ...state.project.verification, at: iso(state.project.verification.at) }
      : null,
    attestation: state.project.attestation
      ? {
          jws: state.project.attestation.jws,
          hash: state.project.attestation.hash,
          at: iso(state.project.attestation.at),
          profile_version: state.project.attestation.profileVersion,
          config_version: state.project.attestation.configVersion,
        }
      : null,
  };
}

/** Whether a signed-in account may read a project: it owns the client, or it administers the profile's org. */
async function maySee(
  services: Pick<ControlPlaneServices, 'storage'>,
  viewer: Viewer,
  state: ProjectState,
): Promise<boolean> {
  if (viewer.operator) return true;
  if (state.client?.ownerId === viewer.identityId) return true;
  const slug = (state.profile.document as unknown as TrustProfile).org;
  if (!slug) return false;
  const org = await services.storage.orgs.getBySlug(slug);
  const member = org ? await services.storage.orgs.member(org.orgId, viewer.identityId) : null;
  return member?.role === 'admin' || member?.role === 'owner';
}

/**
 * A person with a console session of the same account (operator or auditor: this is a read) sees
 * what the admin token sees (docs/console.md); an everyday session alone sees its own projects.
 */
export function viewerOf(identityId: string, consoleOf: { identityId: string } | undefined): Viewer {
  return consoleOf?.identityId === identityId ? { operator: true } : { operator: false, identityId };
}

/** `GET /rollout`: every project the viewer may see, by name. */
export async function rolloutTruth(services: ControlPlaneServices, viewer: Viewer) {
  const rows = [];
  for (const project of await services.storage.rollout.listProjects()) {
    if (!(await services.storage.rollout.latestDocument('profile', project.project))) continue;
    const state = await projectState(services, project.project);
    if (await maySee(services, viewer, state)) rows.push(describeRollout(state));
  }
  return rows;
}

/** `GET /projects/{client_id}/profile`: the slice of the project a client is registered for; 404 alike for unknown and foreign. */
export async function projectSliceOfClient(services: ControlPlaneServices, viewer: Viewer, clientId: string) {
  const project = await services.storage.rollout.projectOfClient(clientId);
  if (!project) throw fail('not_found', 'no project is registered with this client');
  const state = await projectState(services, project.project);
  if (!(await maySee(services, viewer, state))) throw fail('not_found', 'no project is registered with this client');
  return describeSlice(state);
}
