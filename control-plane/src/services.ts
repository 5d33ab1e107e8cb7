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
import { resolveMasterKey } from './keys/master-key.js';
import { Ledger } from './ledger/ledger.js';
import { createSecrets } from './keys/secrets.js';
import { createMailer } from './mail/mailer.js';
import { summarizeMigration } from './storage/migration-ledger.js';
import { describeStorage, openExistingStorage, openStorage, type StorageConfig } from './storage/open-storage.js';
import type { Storage } from './storage/types.js';
import { ClientOrigins } from './clients/client-origins.js';
import { publishedInPlaceOrigins } from './clients/in-place-origins.js';
import { BackchannelLogoutWorker } from './logout/backchannel.js';

export interface OpenOptions {
  now?: () => number;
  /** Use this shared state instead of opening one from the config (tests). */
  state?: SharedState;
  warn?: (message: string) => void;
  notify?: (line: string) => void;
}

export interface RunningServices extends ControlPlaneServices {
  close(): Promise<void>;
}

/** Opens storage, shared state and the key ring; starts the key schedule. */
export async function openControlPlaneServices(
  config: ControlPlaneConfig & { issuer: string },
  options: OpenOptions = {},
): Promise<RunningServices> {
  const now = options.now ?? Date.now;
  const master = resolveMasterKey(config.masterKey, config.dataDir);
  if (master.devKeyFile) {
    options.warn?.(
      `KEYPLANE_MASTER_KEY is not set: using the generated dev key ${master.devKeyFile}. Set a master key in production.`,
    );
  }
  const metrics = new Registry();
  const dependencies = new DependencyMonitor({ now });
  countDependencyErrors(dependencies, metrics);
  const storage: Storage = await openStorage(config, {
    monitor: dependencies,
    // A new store, or migrations applied, said in a line: a mistyped data path is noticed.
    onMigrated: (report) => {
      if (report.created || report.applied.length > 0)
        for (const line of summarizeMigration(describeStorage(config), report)) options.notify?.(line);
    },
  });
  let state: SharedState | undefined;
  try {
    state = options.state ?? (await openSharedState(config, undefined, dependencies));
    const keys = new KeyRing(storage, master.key, serverRotationPolicy(config), now);
    await keys.ensure();
    const reload = setInterval(() => void keys.reload().catch(() => undefined), 10_000).unref();
    const schedule = setInterval(() => void keys.ensure().catch(() => undefined), 3_600_000).unref();
    const opened = state;
    const events = new EventBus();
    // The receipt ledger subscribes first, so every event's receipt is written in its transaction.
    const ledger = new Ledger({
      storage,
      signingKey: () => keys.current(),
      now,
      metrics,
      ...config.ledger,
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
    await ledger.start();
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
    });
    // Logout tokens queued on this replica are delivered at once; those of others (or left by a
    // crash) on the next poll.
    const backchannelLogout = new BackchannelLogoutWorker(
      { storage, events, keys, config, fetcher, now },
      {
        ...config.oidc.backchannelLogout,
        onError: (error) => options.warn?.(`back-channel logout delivery failed: ${(error as Error).message}`),
      },
    );
    events.subscribe((_tx, event) => {
      if (event.type === 'logout.backchannel_queued') backchannelLogout.nudge();
    });
    backchannelLogout.start();
    return {
      config,
      storage,
      state: opened,
      dependencies,
      keys,
      metrics,
      events,
      ledger,
      secrets: createSecrets(master.key),
      clientOrigins,
      mailer,
      now,
      fetcher,
      backchannelLogout,
      notify: options.notify ?? (() => undefined),
      close() {
        // Idempotent: a test (or a signal handler) may close before the owner's own teardown does.
        closing ??= (async () => {
          await backchannelLogout.close();
          await ledger.close();
          clearInterval(reload);
          clearInterval(schedule);
          await mailer.close();
          if (!options.state) await opened.close();
          await storage.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    if (state && !options.state) await state.close();
    await storage.close();
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
