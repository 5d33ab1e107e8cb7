import { fail } from '#lib/errors/keyplane-error.js';
import type { GatewayMode } from '#lib/gateway-protocol/policy.js';
import { validateClientMetadata, type ClientMetadata } from '#lib/oauth/client-metadata.js';
import { profileRedirectUris, profileResources } from '#lib/profiles/constraints.js';
import type { TrustProfile } from '#lib/profiles/documents.js';
import {
  computeRolloutStatus,
  evidenceMatches,
  type RolloutReason,
  type RolloutStatus,
} from '#lib/profiles/rollout-status.js';
import { signAttestation } from '#lib/profiles/signed-documents.js';
import type { ControlPlaneServices } from '../context.js';
import { registerClient, staleRevision, updateClient, type ClientChange } from '../clients/registration.js';
import { gatewayEnforcement, type GatewayEnforcement } from '../managed-gateways/issue-config.js';
import type {
  RolloutAttestation,
  RolloutVerification,
  StoredClient,
  StoredProject,
  StoredRolloutDocument,
} from '../storage/interface.js';
import { refuseMetadataOutside } from './constraints.js';
import { latestProfile, verifyPresented } from './documents.js';

/** A passing verification is good for attesting this long. */
export const VERIFICATION_VALID_MS = 24 * 3600 * 1000;
const GATE_CALLBACK = '/_gate/callback';

export interface ProjectState {
  project: StoredProject;
  profile: StoredRolloutDocument;
  plan: StoredRolloutDocument | null;
  client: StoredClient | null;
  enforcement: GatewayEnforcement | null;
  status: RolloutStatus;
  reason: RolloutReason;
}

/** Everything known about one project: declared (profile, registration, policy) and observed (evidence), judged. */
export async function projectState(services: ControlPlaneServices, name: string): Promise<ProjectState> {
  const profile = await latestProfile(services, name);
  const project = await services.storage.rollout.ensureProject(name, services.now());
  const plan = await services.storage.rollout.latestDocument('plan', name);
  const client = project.clientId ? await services.storage.clients.get(project.clientId) : null;
  const enforcement = client ? await gatewayEnforcement(services, client) : null;
  const { status, reason } = computeRolloutStatus({
    registered: client !== null,
    declared: enforcement?.declared
      ? { hash: enforcement.declared.hash, mode: enforcement.declared.policy.mode }
      : null,
    observed: enforcement?.observed ?? [],
    now: services.now(),
  });
  return { project, profile, plan, client, enforcement, status, reason };
}

function requireClient(state: ProjectState): StoredClient {
  if (!state.client)
    throw fail(
      'project_not_registered',
      `${state.project.project} has no registered client: run keyplane rollout register first`,
    );
  return state.client;
}

export interface RegisterInput {
  /** The signed profile the caller holds; it must be this control plane's newest version. */
  profile?: string;
  environments?: string[];
  redirect_uris?: string[];
  resources?: string[];
  client_name?: string;
  routes?: unknown[];
}

export interface RegisterResult {
  created: boolean;
  state: ProjectState;
  change?: ClientChange;
}

/** The registration the profile asks for: the chosen environments' URIs, the declared principals, a gateway that starts observing. */
function metadataFromProfile(profile: TrustProfile, input: RegisterInput): ClientMetadata {
  const chosen = input.environments ?? profile.environments.map((environment) => environment.name);
  const unknown = chosen.filter((name) => !profile.environments.some((environment) => environment.name === name));
  if (unknown.length > 0) throw fail('invalid_request', `the profile declares no environment ${unknown.join(', ')}`);
  const environments = profile.environments.filter((environment) => chosen.includes(environment.name));
  const redirectUris = input.redirect_uris ?? [
    ...new Set(environments.flatMap((environment) => environment.redirect_uris)),
  ];
  const resources = input.resources ?? [...new Set(environments.flatMap((environment) => environment.resources))];
  const access = { humans: profile.principals.humans, agents: profile.principals.agents };
  refuseMetadataOutside({ redirect_uris: redirectUris, resources, access }, profile);
  const gateway = redirectUris.some((uri) => uri.endsWith(GATE_CALLBACK));
  return validateClientMetadata({
    client_name: input.client_name ?? profile.project,
    redirect_uris: redirectUris,
    resources,
    access,
    scope: 'openid email',
    token_endpoint_auth_method: 'client_secret_basic',
    // A gateway starts by observing: nothing is refused until canary and attest say so.
    ...(gateway ? { gateway: { mode: 'observe', routes: input.routes ?? [{ path: '/' }] } } : {}),
  });
}

/**
 * `register`: the project's client, made from its newest signed profile (the operator owns it).
 * Idempotent: a project whose client exists answers with that client and issues nothing.
 */
export async function registerProject(
  services: ControlPlaneServices,
  name: string,
  input: RegisterInput,
): Promise<RegisterResult> {
  const profile = await latestProfile(services, name);
  if (input.profile !== undefined) {
    const presented = await verifyPresented(services, 'profile', input.profile);
    if (presented.payload.sub !== name)
      throw fail(
        'profile_signature_invalid',
        `the signed profile is for ${String(presented.payload.sub)}, not ${name}`,
      );
    if (presented.hash !== profile.hash)
      throw fail(
        'profile_signature_invalid',
        `the signed profile is not version ${profile.version}, the newest on record for ${name}`,
      );
  }
  const document = profile.document as unknown as TrustProfile;
  const before = await projectState(services, name);
  if (before.client) return { created: false, state: before };
  const metadata = metadataFromProfile(document, input);
  const change = await registerClient(
    services,
    metadata,
    { by: 'admin', ownerId: null },
    {
      onInsert: async (tx, client) => {
        if (!(await tx.rollout.bindClient(name, client.clientId, services.now())))
          throw fail('conflict', `${name} was registered at the same moment; run register again`);
        await services.events.record(tx, {
          type: 'rollout.registered',
          at: services.now(),
          outcome: 'success',
          project: name,
          clientId: client.clientId,
          profileVersion: profile.version,
        });
      },
    },
  );
  return { created: true, state: await projectState(services, name), change };
}

export interface VerificationCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * The checks only the control plane can make: the registration names every redirect URI the
 * profile declares, and the gateway's evidence is fresh and names the declared config.
 */
export function serverChecks(state: ProjectState): VerificationCheck[] {
  const client = requireClient(state);
  const profile = state.profile.document as unknown as TrustProfile;
  const registered = new Set(client.metadata.redirect_uris);
  const missing = profileRedirectUris(profile).filter((uri) => !registered.has(uri));
  const checks: VerificationCheck[] = [
    {
      name: 'registration',
      ok: missing.length === 0,
      detail:
        missing.length === 0
          ? `the client registers the profile's ${registered.size} redirect URI(s) and ${profileResources(profile).length} resource(s)`
          : `the profile declares redirect URIs the client does not register: ${missing.join(', ')} (register them with an RFC 7592 update)`,
    },
  ];
  const enforcement = state.enforcement;
  if (!enforcement?.declared) {
    checks.push({
      name: 'evidence',
      ok: false,
      detail: 'the client has no gateway policy, so no gateway can report evidence',
    });
    return checks;
  }
  const fresh = evidenceMatches({
    registered: true,
    declared: { hash: enforcement.declared.hash, mode: enforcement.declared.policy.mode },
    observed: enforcement.observed,
    now: enforcement.now,
  });
  checks.push({
    name: 'evidence',
    ok: fresh,
    detail: fresh
      ? `${enforcement.observed.filter((report) => enforcement.now < report.expiresAt).length} gateway instance(s) report config version ${enforcement.declared.version} freshly`
      : explainEvidence(enforcement),
  });
  return checks;
}

function explainEvidence(enforcement: GatewayEnforcement): string {
  switch (enforcement.reason) {
    case 'no_evidence':
      return "no gateway has reported evidence yet: start the gateway with this client's id and secret and --control-plane pointing here";
    case 'evidence_expired':
      return 'the gateway evidence has expired: the gateway stopped reporting (is it running and able to reach the control plane?)';
    case 'failing_closed':
      return 'a gateway reports that it holds no valid config and refuses everything (fail closed): check its client secret and logs';
    case 'config_mismatch':
      return `a gateway reports another config than the declared version ${enforcement.declared?.version}: it has not pulled the newest yet (wait 5 s) or cannot verify it`;
    default:
      return `the evidence does not match the declared config (${enforcement.reason})`;
  }
}

/** `verify`: records the outcome of the caller's live checks together with the control plane's own. */
export async function recordVerification(
  services: ControlPlaneServices,
  name: string,
  reported: VerificationCheck[],
): Promise<{ verification: RolloutVerification; receipt?: string }> {
  const state = await projectState(services, name);
  const client = requireClient(state);
  const checks = [
    ...reported.filter((check) => !['registration', 'evidence'].includes(check.name)),
    ...serverChecks(state),
  ];
  const now = services.now();
  const verification: RolloutVerification = {
    passed: checks.every((check) => check.ok),
    at: now,
    profileVersion: state.profile.version,
    configHash: state.enforcement?.declared?.hash ?? null,
    checks,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.rollout.recordVerification(name, verification, now);
    return services.events.record(tx, {
      type: 'rollout.verified',
      at: now,
      outcome: verification.passed ? 'success' : 'failure',
      project: name,
      clientId: client.clientId,
      profileVersion: state.profile.version,
      passed: verification.passed,
      failed: checks.filter((check) => !check.ok).map((check) => check.name),
    });
  });
  return { verification, ...(receipt ? { receipt } : {}) };
}

export interface PolicyChange {
  changed: boolean;
  state: ProjectState;
  receipt?: string;
}

/**
 * Moves the gateway policy to `mode` through an RFC 7592 update at `revision` (the caller's
 * reading of the registration): a registration that moved on is refused as `stale_revision`,
 * never overwritten. Asking for the state it is in already changes nothing.
 */
async function changeMode(
  services: ControlPlaneServices,
  state: ProjectState,
  target: { mode: GatewayMode; percent?: number },
  revision: number | undefined,
): Promise<PolicyChange> {
  const client = requireClient(state);
  const gateway = client.metadata.gateway;
  if (!gateway)
    throw fail('no_gateway_policy', "the project's client has no gateway policy; canary and attest act on a gateway");
  if (revision !== undefined && revision !== client.revision) staleRevision();
  if (gateway.mode === target.mode && (target.percent === undefined || gateway.canary_percent === target.percent))
    return { changed: false, state };
  const { canary_percent: _previous, ...rest } = gateway;
  const next = {
    ...rest,
    mode: target.mode,
    ...(target.percent !== undefined ? { canary_percent: target.percent } : {}),
  };
  const change = await updateClient(services, client, revision ?? client.revision, {
    ...client.metadata,
    gateway: next,
  });
  const now = services.now();
  await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'rollout.policy_changed',
      at: now,
      outcome: 'success',
      project: state.project.project,
      clientId: client.clientId,
      mode: target.mode,
      canaryPercent: target.percent ?? null,
      revision: change.client.revision,
    }),
  );
  return {
    changed: true,
    state: await projectState(services, state.project.project),
    ...(change.receipt ? { receipt: change.receipt } : {}),
  };
}

/** `canary --percent N`: enforce for a stable N % of sessions, observe the rest. */
export async function startCanary(
  services: ControlPlaneServices,
  name: string,
  percent: number,
  revision?: number,
): Promise<PolicyChange> {
  if (!Number.isInteger(percent) || percent < 0 || percent > 100)
    throw fail('invalid_request', 'percent must be an integer from 0 to 100');
  return changeMode(services, await projectState(services, name), { mode: 'canary', percent }, revision);
}

export interface AttestResult extends PolicyChange {
  attestation: RolloutAttestation;
}

/**
 * `attest`: only after a passing verification of the newest profile (within 24 h) and while the
 * gateway's evidence is fresh and matches; then the policy moves to `enforce` and a signed
 * attestation (`typ: rollout-attestation+jwt`) records what was seen. Attesting an attested
 * project again returns the attestation it has.
 */
export async function attestProject(
  services: ControlPlaneServices,
  name: string,
  revision?: number,
): Promise<AttestResult> {
  const state = await projectState(services, name);
  const client = requireClient(state);
  const existing = state.project.attestation;
  if (existing && existing.profileVersion === state.profile.version && client.metadata.gateway?.mode === 'enforce') {
    return { changed: false, state, attestation: existing };
  }
  const verification = state.project.verification;
  const now = services.now();
  if (!verification || !verification.passed)
    throw fail('verification_required', `${name} has no passing verification: run keyplane rollout verify first`);
  if (verification.profileVersion !== state.profile.version)
    throw fail(
      'verification_required',
      `the last verification was of profile version ${verification.profileVersion}; version ${state.profile.version} needs keyplane rollout verify`,
    );
  if (now - verification.at > VERIFICATION_VALID_MS)
    throw fail(
      'verification_required',
      'the last passing verification is older than 24 hours: run keyplane rollout verify again',
    );
  const declared = state.enforcement?.declared;
  if (
    !declared ||
    !evidenceMatches({
      registered: true,
      declared: { hash: declared.hash, mode: declared.policy.mode },
      observed: state.enforcement!.observed,
      now: state.enforcement!.now,
    })
  ) {
    throw fail(
      'evidence_not_fresh',
      `the gateway evidence is not fresh and matching: ${state.enforcement ? explainEvidence(state.enforcement) : 'no gateway'}`,
    );
  }
  const fresh = state.enforcement!.observed.filter((report) => now < report.expiresAt);
  const moved = await changeMode(services, state, { mode: 'enforce' }, revision);
  const facts = {
    project: name,
    profile: { version: state.profile.version, hash: state.profile.hash },
    verification: {
      at: new Date(verification.at).toISOString(),
      checks: verification.checks.map((check) => check.name),
    },
    evidence: {
      config_version: declared.version,
      config_hash: declared.hash,
      instances: fresh.map((report) => report.instance),
    },
    policy: { mode: 'enforce', revision: moved.state.client!.revision },
  };
  const signed = await signAttestation(
    { issuer: services.config.issuer, clientId: client.clientId, now, facts },
    services.keys.current(),
  );
  const attestation: RolloutAttestation = {
    jws: signed.jws,
    hash: signed.hash,
    at: now,
    profileVersion: state.profile.version,
    configVersion: declared.version,
    configHash: declared.hash,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.rollout.recordAttestation(name, attestation, now);
    return services.events.record(tx, {
      type: 'rollout.attested',
      at: now,
      outcome: 'success',
      project: name,
      clientId: client.clientId,
      profileVersion: state.profile.version,
      configVersion: declared.version,
      attestationHash: signed.hash,
    });
  });
  return { changed: true, state: await projectState(services, name), attestation, ...(receipt ? { receipt } : {}) };
}
