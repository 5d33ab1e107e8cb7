import { Counter, type Registry } from 'prom-client';
import type { AccessDirectory } from '#lib/access/directory.js';
import { orgsNamedBy, type Membership } from '#lib/access/evaluate-access.js';
import { fail } from '#lib/errors/keyplane-error.js';
import {
  GATEWAY_CONFIG_LIFETIME_SECONDS,
  REVOKED_SESSIONS_LIMIT,
  canReuseIssuedConfig,
  deriveIssuedPolicy,
  hashIssuedContent,
  signGatewayConfig,
} from '#lib/gateway-protocol/config-issuance.js';
import {
  computeEnforcementStatus,
  type EnforcementReason,
  type EnforcementStatus,
} from '#lib/gateway-protocol/enforcement-status.js';
import { applyProfileToPolicy } from '#lib/profiles/constraints.js';
import type { TrustProfile } from '#lib/profiles/documents.js';
import type { ControlPlaneServices } from '../context.js';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import type { IssuedGatewayConfig, StoredClient, StoredGatewayEvidence, Stores } from '../storage/interface.js';

/** What issuing a config needs from the services. */
export type GatewayServices = Pick<ControlPlaneServices, 'storage' | 'keys' | 'config' | 'events' | 'metrics' | 'now'>;

/** Instances considered in a status, most recently heard from first. */
const STATUS_INSTANCES = 50;

/**
 * The trust profile in force for a client (docs/rollout.md#what-a-profile-constrains): the
 * newest signed version of the project the client is registered for, or null.
 */
export async function profileOfClient(stores: Pick<Stores, 'rollout'>, clientId: string): Promise<TrustProfile | null> {
  const project = await stores.rollout.projectOfClient(clientId);
  if (!project) return null;
  const latest = await stores.rollout.latestDocument('profile', project.project);
  return latest ? (latest.document as unknown as TrustProfile) : null;
}

/**
 * What a config for this client states now: the registered policy with each route's resource,
 * raised to the floor of the client's trust profile when it has one, and the deny list of its
 * sessions revoked within the last session lifetime (a gateway session cannot outlive the
 * control-plane session it came from by longer, docs/gateway.md#revoked-sessions).
 */
async function issuedContent(
  services: GatewayServices,
  client: StoredClient,
  stores: Pick<Stores, 'sessions' | 'rollout' | 'orgs' | 'teams' | 'identities' | 'gateway'>,
  now: number,
) {
  const registered = deriveIssuedPolicy(client.metadata.gateway ?? noPolicy(), {
    redirectUris: client.metadata.redirect_uris,
    resources: client.metadata.resources,
  });
  const profile = await profileOfClient(stores, client.clientId);
  const policy = profile ? applyProfileToPolicy(registered, profile) : registered;
  const since = now - services.config.lifetimes.sessionAbsolute * 1000;
  const revokedSessions = await stores.sessions.listRevokedForClient(client.clientId, since, REVOKED_SESSIONS_LIMIT);
  const directory = await reusableDirectoryFor(services, client.clientId, stores, policy);
  return { policy, revokedSessions, directory, policyHash: hashIssuedContent(policy, revokedSessions, directory) };
}

/** A directory built for a client, with what it was built from. */
interface BuiltDirectory {
  generation: number;
  rules: string;
  directory: AccessDirectory | undefined;
}

/** Per control plane (its services object), the directory last built for each client. */
const builtDirectories = new WeakMap<object, Map<string, BuiltDirectory>>();
const buildCounters = new WeakMap<Registry, Counter>();

/** `kp_gateway_directory_builds_total`: member directories read from storage (a poll that reuses one does not count). */
function directoryBuilds(registry: Registry): Counter {
  let counter = buildCounters.get(registry);
  if (!counter) {
    counter = new Counter({
      name: 'kp_gateway_directory_builds_total',
      help: 'Gateway member directories built from storage; a config poll with nothing changed reuses the last one.',
      registers: [registry],
    });
    buildCounters.set(registry, counter);
  }
  return counter;
}

/** Registers the directory metric so /metrics lists it from the start. */
export function registerGatewayDirectoryMetrics(registry: Registry): void {
  directoryBuilds(registry);
}

/**
 * The client's member directory (docs/gateway.md#access-rules), built again only when the
 * directory generation or the client's rules moved since it was last built. The generation is
 * read before the members: a write landing in between makes the directory newer than its
 * generation, never older, and the next poll (seeing the bumped generation) builds it again.
 */
async function reusableDirectoryFor(
  services: GatewayServices,
  clientId: string,
  stores: Pick<Stores, 'orgs' | 'teams' | 'identities' | 'gateway'>,
  policy: GatewayPolicy,
): Promise<AccessDirectory | undefined> {
  const rules = JSON.stringify(policy.routes.map((route) => route.allow ?? null));
  const generation = await stores.gateway.directoryGeneration();
  let built = builtDirectories.get(services);
  if (!built) builtDirectories.set(services, (built = new Map()));
  const last = built.get(clientId);
  if (last && last.generation === generation && last.rules === rules) return last.directory;
  const directory = await accessDirectoryFor(stores, policy);
  if (directory !== undefined) directoryBuilds(services.metrics).inc();
  built.set(clientId, { generation, rules, directory });
  return directory;
}

/** Accounts read per query when the directory is built. */
const DIRECTORY_BATCH = 1000;

/**
 * The accounts the policy's `allow` rules can name (docs/gateway.md#access-rules): every member
 * of an org they name, with its role, and every account `users` names, each with its username
 * and whether it is disabled. Built again whenever the directory generation moves (a trigger
 * bumps it with every such write), so a removal, a role change or a disabled account mints a new
 * version that reaches the gateway at its next poll; undefined when no route
 * has rules (the config stays as it was before rules existed).
 */
export async function accessDirectoryFor(
  stores: Pick<Stores, 'orgs' | 'teams' | 'identities'>,
  policy: GatewayPolicy,
): Promise<AccessDirectory | undefined> {
  const rules = policy.routes.flatMap((route) => (route.allow ? [route.allow] : []));
  if (rules.length === 0) return undefined;
  const memberships = new Map<string, Membership[]>();
  for (const slug of new Set(rules.flatMap(orgsNamedBy))) {
    const org = await stores.orgs.getBySlug(slug);
    if (!org) continue;
    const teams = new Map<string, string[]>();
    for (const { teamSlug, identityId } of await stores.teams.membershipsIn(org.orgId))
      teams.set(identityId, [...(teams.get(identityId) ?? []), teamSlug]);
    for (const member of await stores.orgs.members(org.orgId)) {
      const list = memberships.get(member.identityId) ?? [];
      const held = teams.get(member.identityId);
      list.push({ slug: org.slug, role: member.role, ...(held ? { teams: held } : {}) });
      memberships.set(member.identityId, list);
    }
  }
  for (const entry of new Set(rules.flatMap((r) => r.users ?? []))) {
    // An id first, then a username (a username may look like an id: `usr_x` is a valid one).
    const identity =
      (await stores.identities.get(entry)) ?? (await stores.identities.findByUsername(entry.trim().toLowerCase()));
    if (identity && !memberships.has(identity.identityId)) memberships.set(identity.identityId, []);
  }
  // One read per batch, not two per member (docs/gateway.md#access-rules: a large org's directory).
  const known = new Map<string, { username: string; state: string }>();
  const ids = [...memberships.keys()];
  for (let at = 0; at < ids.length; at += DIRECTORY_BATCH)
    for (const row of await stores.identities.summaries(ids.slice(at, at + DIRECTORY_BATCH)))
      known.set(row.identityId, row);
  const identities: AccessDirectory['identities'] = {};
  for (const [identityId, orgs] of [...memberships].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const identity = known.get(identityId);
    if (!identity) continue;
    identities[identityId] = {
      username: identity.username,
      ...(orgs.length > 0 ? { orgs: orgs.sort((a, b) => (a.slug < b.slug ? -1 : 1)) } : {}),
      ...(identity.state !== 'active' ? { disabled: true as const } : {}),
    };
  }
  return { identities };
}

function noPolicy(): never {
  throw fail(
    'no_gateway_policy',
    'this client has no gateway metadata; add `gateway` to its registration (RFC 7592 update)',
  );
}

/**
 * The config the control plane declares for a gateway client now: the newest issued one when it
 * may be served again (same policy, current key, less than half its lifetime old), otherwise a
 * new version. Minting happens in one storage transaction that reads the newest version again,
 * so two concurrent requests never issue one version with two contents (the gateway would
 * refuse that as equivocation).
 */
export async function currentGatewayConfig(
  services: GatewayServices,
  client: StoredClient,
): Promise<IssuedGatewayConfig> {
  const { storage, keys, config } = services;
  const now = services.now();
  const key = keys.current();
  const wanted = await issuedContent(services, client, storage, now);
  const latest = await storage.gateway.latestConfig(client.clientId);
  if (canReuseIssuedConfig(latest, { policyHash: wanted.policyHash, kid: key.kid, now })) return latest!;
  return storage.transaction(async (tx) => {
    // Read both again inside the transaction: a registration update or another mint may have landed.
    const current = await tx.clients.get(client.clientId);
    const {
      policy: currentPolicy,
      revokedSessions,
      directory,
      policyHash,
    } = await issuedContent(services, current ?? noPolicy(), tx, now);
    const newest = await tx.gateway.latestConfig(client.clientId);
    if (canReuseIssuedConfig(newest, { policyHash, kid: key.kid, now })) return newest!;
    const version = (newest?.version ?? 0) + 1;
    const signed = await signGatewayConfig(
      {
        issuer: config.issuer,
        clientId: client.clientId,
        version,
        policy: currentPolicy,
        revokedSessions,
        ...(directory !== undefined ? { directory } : {}),
        now,
        lifetimeSeconds: GATEWAY_CONFIG_LIFETIME_SECONDS,
      },
      key,
    );
    const issued: IssuedGatewayConfig = {
      clientId: client.clientId,
      version,
      jws: signed.jws,
      hash: signed.hash,
      policyHash,
      policy: currentPolicy,
      kid: key.kid,
      issuedAt: signed.issuedAt,
      expiresAt: signed.expiresAt,
    };
    if (!(await tx.gateway.insertConfig(issued)))
      throw fail('conflict', 'another config version was issued at the same moment; retry');
    await services.events.record(tx, {
      type: 'gateway.config_issued',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      version,
      configHash: signed.hash,
      policyHash,
      mode: currentPolicy.mode,
      kid: key.kid,
    });
    return issued;
  });
}

export interface GatewayEnforcement {
  status: EnforcementStatus;
  reason: EnforcementReason;
  /** What a polling gateway gets next, so a registration update shows as a mismatch at once. */
  declared: IssuedGatewayConfig | null;
  observed: StoredGatewayEvidence[];
  now: number;
}

/** Declared config and observed evidence of a client, and the verdict on them (the status API and /apps). */
export async function gatewayEnforcement(services: GatewayServices, client: StoredClient): Promise<GatewayEnforcement> {
  const declared = client.metadata.gateway ? await currentGatewayConfig(services, client) : null;
  const observed = await services.storage.gateway.listEvidence(client.clientId, STATUS_INSTANCES);
  const now = services.now();
  return { ...computeEnforcementStatus(declared, observed, now), declared, observed, now };
}
