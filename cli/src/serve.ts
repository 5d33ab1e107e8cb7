import { findFreePort } from '#lib/runtime/listen.js';
import { IpcSharedState, SharedStateHub, type IpcEndpoint } from '#lib/runtime/shared-state/ipc.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import {
  announceListening,
  isWorkerProcess,
  startWorkers,
  stopWhenOrphaned,
  workerCount,
} from '#lib/runtime/workers.js';
import { progress, runUntilSignal, say } from './io.js';

/** A server that runs until a signal: its URL, its TLS reload (with `tls`), its drain. */
export interface Served {
  url: string;
  reloadTls?: () => void;
  close(): Promise<void>;
}

export interface ServeWithWorkers {
  /** `workers` from the config: a number or `auto`. */
  workers: number | 'auto';
  host: string;
  port: number;
  /** Redis is configured: every process opens it itself, and the primary holds no state. */
  usesRedis: boolean;
  /** One process doing everything (`--workers 1`, the default). */
  single(): Promise<Served>;
  /** The primary's own part, on the port it fixed for every worker: background work, no requests. */
  primary(port: number, state: SharedState | undefined): Promise<{ close(): Promise<void> }>;
  /** A worker: serves requests on the shared port; `state` is the primary's when there is no Redis. */
  worker(state: SharedState | undefined): Promise<Served>;
}

/**
 * Runs a server command as one process, or as a primary with `workers` workers sharing one port
 * (docs/scaling.md#workers). Prints `listening <url>` once, when every worker listens; SIGTERM
 * drains every worker, then the primary; SIGHUP reloads the TLS files everywhere.
 */
export async function serveWithWorkers(run: ServeWithWorkers): Promise<void> {
  if (isWorkerProcess()) return serveAsWorker(run);
  const count = workerCount(run.workers);
  if (count <= 1) return serveUntilSignal(await run.single());
  // Every worker must listen on the same port and derive the same URL: `--port 0` is fixed here.
  const port = run.port === 0 ? await findFreePort(run.host) : run.port;
  const hub = run.usesRedis ? undefined : new SharedStateHub();
  let background: { close(): Promise<void> } | undefined;
  try {
    background = await run.primary(port, hub);
    const workers = await startWorkers({ count, extraArgs: ['--port', String(port)], hub, notify: progress });
    const done = background;
    say(`listening ${workers.url}`);
    process.on('SIGHUP', () => workers.signalWorkers('SIGHUP'));
    return runUntilSignal(async () => {
      await workers.close();
      await done.close();
      await hub?.close();
    });
  } catch (error) {
    await background?.close();
    await hub?.close();
    throw error;
  }
}

/** Announces a started server (`listening URL` on stdout) and keeps it up until SIGTERM or SIGINT; SIGHUP reloads TLS. */
export function serveUntilSignal(running: Served): Promise<void> {
  say(`listening ${running.url}`);
  onSighup(running);
  return runUntilSignal(() => running.close());
}

async function serveAsWorker(run: ServeWithWorkers): Promise<void> {
  const state = run.usesRedis ? undefined : new IpcSharedState(process as unknown as IpcEndpoint);
  const running = await run.worker(state);
  onSighup(running);
  announceListening(running.url);
  // The primary tells its workers when to stop (SIGTERM); a terminal's SIGINT reaches the whole
  // group, and a worker that left on its own would only be replaced.
  process.on('SIGINT', () => undefined);
  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      void running
        .close()
        .then(() => state?.close())
        .then(
          () => process.exit(0),
          (error: unknown) => {
            process.stderr.write(`error while closing: ${(error as Error).message}\n`);
            process.exit(1);
          },
        )
        .finally(resolve);
    };
    process.once('SIGTERM', stop);
    stopWhenOrphaned(stop);
  });
}

function onSighup(running: Served): void {
  const reload = running.reloadTls;
  if (!reload) return;
  process.on('SIGHUP', () => {
    try {
      reload();
      progress('SIGHUP: TLS certificate and key reloaded');
    } catch (error) {
      progress(`SIGHUP: the TLS files were not reloaded, the current ones stay: ${(error as Error).message}`);
    }
  });
}
