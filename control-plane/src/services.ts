import { AuthenticatorMetadata } from './passkeys/metadata.js';
import { Counter, Registry } from 'prom-client';
import type { ControlPlaneConfig } from '#config/types.js';
import { createGuardedFetcher } from '#lib/fetch/guarded-fetch.js';
import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { openSharedState } from '#lib/runtime/shared-state/index.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import type { ControlPlaneServices } from './context.js';
import { EventBus } from './events/bus.js';
import { KeyRing, serverRotationPolicy } from './keys/key-ring.js';
import { assertMasterKeyOpens, resolveMasterKey } from './keys/master-key.js';
import { Ledger } from './ledger/ledger.js';
import { NoteKeyRing } from './ledger/note-keys.js';
import { TransparencyLog } from './ledger/transparency-log.js';
import { createSecrets } from './keys/secrets.js';
import { createMailer } from './mail/mailer.js';
import { summarizeMigration } from './storage/migration-ledger.js';
import { describeStorage, openExistingStorage, openStorage, type StorageConfig } from './storage/open-storage.js';
import type { Storage } from './storage/interface.js';
import { ClientOrigins } from './clients/client-origins.js';
import { publishedInPlaceOrigins } from './clients/in-place-origins.js';
import { backchannelLogoutAdapter } from './logout/backchannel.js';
import { DeliveryLoop, OutboxMetrics } from './outbox/delivery-loop.js';
import { WebhookTargets, webhookFollower, webhookAdapter } from './webhooks/outbox.js';
import { SsfTargets, ssfFollower, ssfPushAdapter } from './ssf/outbox.js';
import { scimPushAdapter } from './scim/push.js';
import { ScimPushTargets, scimPushFollower } from './scim/push-queue.js';
import { startTracing, type Tracing } from '#lib/telemetry/tracing.js';
import { traceStorage } from './storage/traced-storage.js';

export interface OpenOptions {
  now?: () => number;
  /** Use this shared state instead of opening one from the config (tests). */
  state?: SharedState;
  warn?: (message: string) => void;
  notify?: (line: string) => void;
  /** Traces to record into instead of the configured `telemetry` (tests). */
  tracing?: Tracing;
  /**
   * Whether this process runs the instance's background work: the sealer, back-channel logout
   * delivery and the key schedule (default true). A worker under `--workers N` passes false and
   * asks the primary, over shared state, to seal or deliver now (docs/scaling.md#workers).
   */
  background?: boolean;
}

/** Channels a worker asks the primary on to seal the ledger or deliver logout tokens now, rather than at the next tick. */
export const SEAL_WANTED_CHANNEL = 'control-plane:seal-wanted';
export const LOGOUT_QUEUED_CHANNEL = 'control-plane:logout-queued';

export interface RunningServices extends ControlPlaneServices {
  close(): Promise<void>;
}

/** Opens storage, shared state and the key ring; starts the key schedule. */
export async function openControlPlaneServices(
  config: ControlPlaneConfig & { issuer: string },
  options: OpenOptions = {},
): Promise<RunningServices> {
  const now = options.now ?? Date.now;
  const background = options.background ?? true;
  const master = resolveMasterKey(config.masterKey, config.dataDir);
  if (master.devKeyFile) {
    options.warn?.(
      `KEYPLANE_MASTER_KEY is not set: using the generated dev key ${master.devKeyFile}. Set a master key in production.`,
    );
  }
  const metrics = new Registry();
  const dependencies = new DependencyMonitor({ now });
  countDependencyErrors(dependencies, metrics);
  const tracing = options.tracing ?? startTracing(config.telemetry);
  const untraced: Storage = await openStorage(config, {
    monitor: dependencies,
    // A new store, or migrations applied, said in a line: a mistyped data path is noticed.
    onMigrated: (report) => {
      if (report.created || report.applied.length > 0)
        for (const line of summarizeMigration(describeStorage(config), report)) options.notify?.(line);
    },
  });
  // Off, storage is left as it is: tracing that is off costs nothing per call.
  const storage = tracing.enabled
    ? traceStorage(untraced, tracing.tracer, config.databaseUrl ? 'postgresql' : 'sqlite')
    : untraced;
  let state: SharedState | undefined;
  try {
    state = options.state ?? (await openSharedState(config, undefined, dependencies));
    // Before the ring creates or opens anything: a store sealed under another key is named, not half-started.
    assertMasterKeyOpens(master, await storage.keys.list());
    const keys = new KeyRing(storage, master.key, serverRotationPolicy(config), now);
    await keys.ensure();
    const reload = setInterval(() => void keys.reload().catch(() => undefined), 10_000).unref();
    const schedule = background
      ? setInterval(() => void keys.ensure().catch(() => undefined), 3_600_000).unref()
      : undefined;
    const opened = state;
    const events = new EventBus();
    const secrets = createSecrets(master.key);
    const noteKeys = new NoteKeyRing(storage, secrets, config.issuer, now);
    await noteKeys.ensure();
    const noteKeyReload = setInterval(() => void noteKeys.reload().catch(() => undefined), 10_000).unref();
    const transparencyLog = new TransparencyLog({
      storage,
      noteKeys,
      issuer: config.issuer,
      witnesses: config.ledger.witnesses,
      now,
      onError: (error) => options.warn?.(`a ledger witness did not cosign: ${(error as Error).message}`),
    });
    // The receipt ledger subscribes first, so every event's receipt is written in its transaction.
    const ledger = new Ledger({
      storage,
      signingKey: () => keys.current(),
      now,
      metrics,
      sealIntervalMs: config.ledger.sealIntervalMs,
      sealMaxReceipts: config.ledger.sealMaxReceipts,
      log: transparencyLog,
      ...(background ? {} : { requestSeal: () => void opened.publish(SEAL_WANTED_CHANNEL, '').catch(() => undefined) }),
      // An outage is logged once by the dependency monitor; the sealer tries again on its next tick.
      onError: (error) => {
        if (!isDependencyUnavailable(error))
          options.warn?.(`sealing the receipt ledger failed: ${(error as Error).message}`);
      },
    });
    events.subscribe(ledger.record);
    const clientOrigins = new ClientOrigins(storage.clients, () => publishedInPlaceOrigins({ storage }));
    events.subscribe((_tx, event) => {
      // A proved domain, a role or a membership changes which in-place origins are published.
      if (event.type.startsWith('client.') || event.type.startsWith('org.')) clientOrigins.forget();
    });
    const unsubscribes: Array<() => Promise<void>> = [];
    if (background) {
      await ledger.start();
      unsubscribes.push(
        await opened.subscribe(SEAL_WANTED_CHANNEL, () => void ledger.sealNow().catch(() => undefined)),
      );
    }
    const mailer = createMailer({
      smtpUrl: config.mail.smtpUrl,
      from: config.mail.from,
      dataDir: config.dataDir,
      onError: (error) => options.warn?.(`outgoing mail failed: ${(error as Error).message}`),
    });
    let closing: Promise<void> | undefined;
    const fetcher = createGuardedFetcher({
      allowPrivateTargets: config.fetch.allowPrivateTargets,
      ...(config.fetch.caFile ? { caFile: config.fetch.caFile } : {}),
      ...(tracing.enabled ? { tracer: tracing.tracer } : {}),
    });
    // Every process verifies attestations, so each loads the BLOB (docs/passkeys.md#metadata).
    const metadata = new AuthenticatorMetadata(config.passkeys.mds, fetcher, (m) => options.warn?.(m));
    await metadata.start();
    // What is queued on this replica is delivered at once; what others queued (or a crash left)
    // on the next poll (docs/architecture.md#the-ledgers-write-path).
    const outboxMetrics = new OutboxMetrics(metrics, now);
    const backchannelLogout = new DeliveryLoop(
      backchannelLogoutAdapter(
        { storage, events, keys, config, fetcher, now },
        config.oidc.backchannelLogout.maxAttempts,
      ),
      {
        pollIntervalMs: config.oidc.backchannelLogout.pollIntervalMs,
        now,
        metrics: outboxMetrics,
        onError: (error) => options.warn?.(`back-channel logout delivery failed: ${(error as Error).message}`),
      },
    );
    events.subscribe((_tx, event) => {
      if (event.type !== 'logout.backchannel_queued') return;
      if (background) backchannelLogout.nudge();
      else void opened.publish(LOGOUT_QUEUED_CHANNEL, '').catch(() => undefined);
    });
    const webhookDelivery = new DeliveryLoop(webhookAdapter({ storage, events, secrets, fetcher, config, now }), {
      pollIntervalMs: config.webhooks.pollIntervalMs,
      leaseMs: config.webhooks.leaseMs,
      now,
      metrics: outboxMetrics,
      onError: (error) => options.warn?.(`webhook delivery failed: ${(error as Error).message}`),
    });
    const webhookTargets = new WebhookTargets(storage);
    await webhookTargets.refresh();
    webhookTargets.start(config.webhooks.pollIntervalMs, (error) =>
      options.warn?.(`webhook list refresh failed: ${(error as Error).message}`),
    );
    // Nudged after the receipt's transaction has had its turn: the loop's claim waits for it anyway.
    ledger.follow(webhookFollower({ config, now }, webhookTargets, () => webhookDelivery.nudge()));
    // Shared Signals (docs/events.md#shared-signals-streams-from-a-receivers-view): the same loop, polled as webhooks are.
    const ssfDelivery = new DeliveryLoop(ssfPushAdapter({ storage, keys, secrets, fetcher, config, now }), {
      pollIntervalMs: config.webhooks.pollIntervalMs,
      now,
      metrics: outboxMetrics,
      onError: (error) => options.warn?.(`shared signals delivery failed: ${(error as Error).message}`),
    });
    const ssfTargets = new SsfTargets(storage);
    await ssfTargets.refresh();
    ssfTargets.start(config.webhooks.pollIntervalMs, (error) =>
      options.warn?.(`shared signals stream refresh failed: ${(error as Error).message}`),
    );
    ledger.follow(ssfFollower({ config, now }, ssfTargets, () => ssfDelivery.nudge()));
    // Outbound SCIM (docs/scim.md#outbound-scim): the same loop, polled as webhooks are.
    const scimPushDelivery = new DeliveryLoop(scimPushAdapter({ storage, events, secrets, fetcher, config, now }), {
      pollIntervalMs: config.webhooks.pollIntervalMs,
      now,
      metrics: outboxMetrics,
      onError: (error) => options.warn?.(`outbound SCIM delivery failed: ${(error as Error).message}`),
    });
    const scimPushTargets = new ScimPushTargets(storage);
    await scimPushTargets.refresh();
    scimPushTargets.start(config.webhooks.pollIntervalMs, (error) =>
      options.warn?.(`outbound SCIM target refresh failed: ${(error as Error).message}`),
    );
    ledger.follow(scimPushFollower({ now }, scimPushTargets, () => scimPushDelivery.nudge()));
    // Only the primary delivers (docs/scaling.md#workers); a worker's receipts reach its loop at the next poll.
    if (background) {
      backchannelLogout.start();
      webhookDelivery.start();
      ssfDelivery.start();
      scimPushDelivery.start();
      unsubscribes.push(await opened.subscribe(LOGOUT_QUEUED_CHANNEL, () => backchannelLogout.nudge()));
    }
    return {
      config,
      storage,
      state: opened,
      dependencies,
      keys,
      metrics,
      events,
      ledger,
      secrets,
      clientOrigins,
      mailer,
      now,
      fetcher,
      metadata,
      backchannelLogout,
      webhookDelivery,
      webhookTargets,
      ssfDelivery,
      ssfTargets,
      scimPushDelivery,
      scimPushTargets,
      tracing,
      background,
      notify: options.notify ?? (() => undefined),
      close() {
        // Idempotent: a test (or a signal handler) may close before the owner's own teardown does.
        closing ??= (async () => {
          for (const unsubscribe of unsubscribes) await unsubscribe();
          metadata.stop();
          await backchannelLogout.close();
          webhookTargets.stop();
          await webhookDelivery.close();
          ssfTargets.stop();
          await ssfDelivery.close();
          scimPushTargets.stop();
          await scimPushDelivery.close();
          await ledger.close();
          clearInterval(reload);
          clearInterval(noteKeyReload);
          clearInterval(schedule);
          await mailer.close();
          if (!options.state) await opened.close();
          await storage.close();
          if (!options.tracing) await tracing.shutdown();
        })();
        return closing;
      },
    };
  } catch (error) {
    if (state && !options.state) await state.close();
    await storage.close();
    if (!options.tracing) await tracing.shutdown();
    throw error;
  }
}

/** `kp_dependency_errors_total{dependency}`: every call to PostgreSQL or Redis that failed as an outage. */
function countDependencyErrors(dependencies: DependencyMonitor, metrics: Registry): void {
  const errors = new Counter({
    name: 'kp_dependency_errors_total',
    help: 'Calls to a dependency that failed as an outage (refused, reset, timed out, failing over), by dependency (postgres, redis).',
    labelNames: ['dependency'],
    registers: [metrics],
  });
  dependencies.listen({ failed: (dependency) => errors.inc({ dependency }) });
}

export interface OfflineServices {
  config: ControlPlaneConfig;
  storage: Storage;
  close(): Promise<void>;
}

/**
 * Storage for the offline CLI commands (keys, ledger audit): the same factory as the server, so
 * they work on SQLite and PostgreSQL alike, without the key schedule, sealer or shared state. The
 * store must exist: these commands never create one.
 */
export async function openOfflineServices(config: ControlPlaneConfig & StorageConfig): Promise<OfflineServices> {
  const storage = await openExistingStorage(config);
  return { config, storage, close: () => storage.close() };
}
