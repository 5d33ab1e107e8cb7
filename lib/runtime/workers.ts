import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { SharedStateHub } from './shared-state/ipc.js';

/** `workers: N | auto` (docs/scaling.md#workers): `auto` is one per core the process may use. */
export function workerCount(setting: number | 'auto'): number {
  return setting === 'auto' ? availableParallelism() : setting;
}

/** Whether this process is a worker forked by a primary under `--workers N`. */
export const isWorkerProcess = (): boolean => cluster.isWorker;

/** Worker → primary: this worker listens (and at which URL). */
interface ListeningMessage {
  kp: 'worker.listening';
  url: string;
}

/** A worker tells its primary that it serves; the primary prints `listening` once all of them do. */
export function announceListening(url: string): void {
  const message: ListeningMessage = { kp: 'worker.listening', url };
  process.send?.(message, () => undefined);
}

/** Calls `stop` once the primary is gone (its IPC channel closed): a worker never outlives its instance. */
export function stopWhenOrphaned(stop: () => void): void {
  process.once('disconnect', stop);
}

export interface PrimaryOptions {
  count: number;
  /** Arguments added after the primary's own for every worker (the port the primary picked for `--port 0`). */
  extraArgs: readonly string[];
  /** The instance's in-process shared state, served to each worker (absent with Redis). */
  hub?: SharedStateHub;
  notify: (line: string) => void;
  /** How long SIGTERM lets workers drain before they are killed. */
  drainMs?: number;
}

export interface RunningPrimary {
  /** The URL the workers announced. */
  url: string;
  /** Sends `signal` to every live worker (SIGHUP: reload the TLS files). */
  signalWorkers(signal: NodeJS.Signals): void;
  /** SIGTERM to every worker, resolved once all have exited (killed after `drainMs`). */
  close(): Promise<void>;
}

const isListening = (message: unknown): message is ListeningMessage =>
  typeof message === 'object' && message !== null && (message as { kp?: unknown }).kp === 'worker.listening';

/**
 * Forks `count` workers of this same command (node:cluster: they share one listening socket and
 * the primary hands each new connection to one of them) and resolves once every one listens. A
 * worker that dies afterwards is replaced; one that dies before the first start completes fails
 * the start (a broken configuration would only die again).
 */
export function startWorkers(options: PrimaryOptions): Promise<RunningPrimary> {
  const drainMs = options.drainMs ?? 15_000;
  cluster.setupPrimary({ args: [...process.argv.slice(2), ...options.extraArgs] });
  const live = new Set<Worker>();
  let closing = false;
  let started = false;
  let url = '';

  return new Promise<RunningPrimary>((resolve, reject) => {
    let listening = 0;
    const fork = (replacing?: number) => {
      const worker = cluster.fork();
      live.add(worker);
      options.hub?.attach(worker);
      worker.on('message', (message: unknown) => {
        if (!isListening(message)) return;
        url ||= message.url;
        if (replacing !== undefined) options.notify(`worker ${worker.process.pid} replaces ${replacing}`);
        else if (++listening === options.count) {
          started = true;
          resolve(running);
        }
      });
      worker.on('exit', (code, signal) => {
        live.delete(worker);
        options.hub?.detach(worker);
        if (closing) return;
        if (!started) {
          closing = true;
          for (const other of live) other.process.kill('SIGTERM');
          reject(new Error(`a worker exited before it listened (${signal ?? `exit code ${code}`})`));
          return;
        }
        options.notify(`worker ${worker.process.pid} exited (${signal ?? `exit code ${code}`}); starting another`);
        fork(worker.process.pid);
      });
    };
    const running: RunningPrimary = {
      get url() {
        return url;
      },
      signalWorkers(signal) {
        for (const worker of live) worker.process.kill(signal);
      },
      close() {
        closing = true;
        const exits = [...live].map(
          (worker) =>
            new Promise<void>((done) => {
              if (worker.isDead()) return done();
              worker.once('exit', () => done());
              const timer = setTimeout(() => worker.process.kill('SIGKILL'), drainMs);
              timer.unref();
              worker.once('exit', () => clearTimeout(timer));
              worker.process.kill('SIGTERM');
            }),
        );
        return Promise.all(exits).then(() => undefined);
      },
    };
    for (let i = 0; i < options.count; i++) fork();
  });
}
