import { createServer, type Server } from 'node:http';
import type { Server as TlsServer } from 'node:tls';
import { defaultGatewayDataDir } from '#config/load.js';
import type { GatewayConfig } from '#config/types.js';
import { defaultPublicUrl, listen } from '#lib/runtime/listen.js';
import { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { lingerOnClose } from '#lib/runtime/linger-close.js';
import { openSharedState } from '#lib/runtime/shared-state/index.js';
import { buildGateway, type Gateway, type GatewayDeps } from './app.js';
import { createConfigPull, type ConfigPull } from './config-pull.js';
import { createEvidencePush, type EvidencePush } from './evidence-push.js';
import { adoptSharedState } from './state-dir.js';
import { fileConfigStore } from './config-store.js';
import { createGatewayTlsServer, reloadTls, tlsFilesOf } from '#lib/runtime/tls-server.js';

/**
 * What this process is under `--workers N` (docs/scaling.md#workers): `single` does everything;
 * the `primary` serves no requests but pulls and saves the signed config and signs and pushes the
 * evidence; a `worker` serves requests, pulls the config without saving it, and signs nothing.
 */
export type GatewayRole = 'single' | 'primary' | 'worker';

export interface RunningGateway {
  url: string;
  gateway: Gateway;
  /** Never listening at a primary under `--workers N`, which serves no requests. */
  server: Server;
  /** Present with `tls`: reads the certificate and key again for new connections (SIGHUP). */
  reloadTls?: () => void;
  /** Present when client credentials are configured. */
  configPull?: ConfigPull;
  /** Present when client credentials are configured. */
  evidencePush?: EvidencePush;
  close(): Promise<void>;
}

/** How long SIGTERM waits for in-flight requests and streams before cutting them. */
const DRAIN_MS = 10_000;
/** Config poll interval: a registration change must reach running gateways within 5 s (docs/gateway.md#pulling-it). */
const CONFIG_PULL_MS = 2_000;
/** Evidence is pushed every 10 s and stays fresh for 30 s, so one lost push never turns the status stale. */
const EVIDENCE_PUSH_MS = 10_000;
const EVIDENCE_TTL_SECONDS = 30;

/**
 * Binds first (so `--port 0` knows its port before the public URL is fixed), then builds the
 * gateway on that socket and restores the last good signed config from the data dir. Prints
 * nothing: the CLI prints `listening <url>`.
 */
export async function startGateway(
  config: GatewayConfig,
  deps: GatewayDeps & { role?: GatewayRole } = {},
): Promise<RunningGateway> {
  const role = deps.role ?? 'single';
  const tls = tlsFilesOf(config.tls);
  // HTTP/1.1 only, with TLS too: `requestTimeout: 0` lets long uploads and streams through.
  const server = tls
    ? (createGatewayTlsServer(tls, { requestTimeout: 0 }) as unknown as Server)
    : createServer({ requestTimeout: 0 });
  const port = role === 'primary' ? config.port : await listen(server, config.port, config.host);
  const url = (config.publicUrl ?? defaultPublicUrl(config.host, port, tls !== null)).replace(/\/$/, '');
  // Shared state given by the caller (tests, `keyplane up`) stays the caller's to close.
  const ownsState = !deps.state;
  let state: Awaited<ReturnType<typeof openSharedState>> | undefined = deps.state;
  // One monitor for the shared state, the gateway's calls and the config pull: an outage is logged once.
  const monitor = deps.monitor ?? new DependencyMonitor({ now: deps.now ?? Date.now });
  try {
    state ??= await openSharedState(config, 'kp:gate:', monitor);
    // docs/gateway.md#state-directory: a gateway that kept its state in the shared ./data takes it along.
    const adopted =
      config.clientId && config.dataDir === defaultGatewayDataDir(config.clientId)
        ? adoptSharedState('data', config.dataDir, config.clientId)
        : [];
    // Workers read the saved config at start but leave writing it to the primary.
    const store = fileConfigStore(config.dataDir);
    const configStore =
      deps.configStore ?? (role === 'worker' ? { load: () => store.load(), save: async () => undefined } : store);
    const gateway = await buildGateway({ ...config, publicUrl: url }, { ...deps, state, monitor, configStore });
    if (adopted.length > 0)
      gateway.log.warn(
        { event: 'gateway.state_adopted', files: adopted, dataDir: config.dataDir },
        `copied ${adopted.join(', ')} from ./data into this gateway's own state directory ${config.dataDir}`,
      );
    await gateway.configHolder.restore(Date.now());
    // The control plane is asked for the config only with client credentials to ask with.
    let push: EvidencePush | undefined;
    const pull =
      config.clientId && config.clientSecret
        ? createConfigPull({
            controlPlane: config.controlPlane,
            clientId: config.clientId,
            clientSecret: config.clientSecret,
            holder: gateway.configHolder,
            now: deps.now ?? Date.now,
            intervalMs: CONFIG_PULL_MS,
            timeoutMs: config.controlPlaneTimeoutMs,
            monitor,
            onResult: (result) => {
              gateway.metrics.configPulls.inc({ outcome: result.outcome });
              if (result.outcome === 'installed') {
                gateway.log.info(
                  { event: 'gateway.config_installed', version: result.version },
                  'signed config installed',
                );
                // Report the new config at once rather than at the next interval.
                void push?.pushOnce();
              } else if (result.outcome === 'refused')
                gateway.log.warn(
                  { event: 'gateway.config_refused', reason: result.reason },
                  'signed config refused; the held config stays in force',
                );
              // A refusal of the gateway itself (wrong secret, unknown client, no policy) will not heal on its own.
              else if (
                result.outcome === 'unavailable' &&
                result.status !== undefined &&
                result.status >= 400 &&
                result.status < 500
              )
                gateway.log.warn(
                  { event: 'gateway.config_unavailable', status: result.status },
                  'the control plane refused the config request: check the client id, secret and gateway metadata',
                );
              else if (result.outcome === 'unavailable')
                gateway.log.debug(
                  { event: 'gateway.config_unavailable', status: result.status },
                  'control plane config not available',
                );
            },
          })
        : undefined;
    if (config.clientId && config.clientSecret && role !== 'worker') {
      push = createEvidencePush({
        controlPlane: config.controlPlane,
        clientId: config.clientId,
        clientSecret: config.clientSecret,
        evidence: (ttl) => gateway.evidence(ttl),
        intervalMs: EVIDENCE_PUSH_MS,
        ttlSeconds: EVIDENCE_TTL_SECONDS,
        timeoutMs: config.controlPlaneTimeoutMs,
        onResult: (result) => {
          gateway.metrics.evidencePushes.inc({ outcome: result.outcome });
          if (result.outcome === 'refused')
            gateway.log.warn(
              { event: 'gateway.evidence_refused', status: result.status, reason: result.reason },
              'the control plane refused the evidence report',
            );
          else if (result.outcome === 'unavailable')
            gateway.log.debug({ event: 'gateway.evidence_unavailable' }, 'control plane not reachable for evidence');
        },
      });
    }
    server.on('request', (req, res) => {
      // A 413 (or any closing answer) sent before the body arrived is read by the client, not reset.
      lingerOnClose(req);
      gateway.handleRequest(req, res);
    });
    server.on('upgrade', gateway.handleUpgrade);
    const opened = state;
    let closing: Promise<void> | undefined;
    return {
      url,
      gateway,
      server,
      ...(tls ? { reloadTls: () => reloadTls(server as unknown as TlsServer, tls) } : {}),
      ...(pull ? { configPull: pull } : {}),
      ...(push ? { evidencePush: push } : {}),
      close: () =>
        (closing ??= (async () => {
          await pull?.stop();
          await push?.stop();
          await drain(server);
          await gateway.close();
          if (ownsState) await opened.close();
        })()),
    };
  } catch (error) {
    await drain(server);
    if (ownsState) await state?.close();
    throw error;
  }
}

/** Stops accepting, lets in-flight requests finish, and cuts what is still open after DRAIN_MS (SSE, WebSockets). */
function drain(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
