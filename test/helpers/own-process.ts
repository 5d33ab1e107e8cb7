import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/**
 * Servers a test starts and stops itself (Redis, Sentinels, PostgreSQL), as children that die
 * with the test process: `setpriv --pdeathsig SIGKILL` (util-linux) asks the kernel to kill each
 * one when its parent goes, so a test killed on timeout leaves no server behind.
 */

const hasSetpriv = spawnSync('setpriv', ['--version']).status === 0;

export interface OwnProcess {
  child: ChildProcess;
  /** What it wrote to stdout and stderr so far (for the message when it fails to start). */
  output(): string;
  /** Sends `signal` (default SIGKILL) and resolves once it exited; at once if it has. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  readonly running: boolean;
}

/** Runs `command args…`, as `user` when given and the test runs as root (PostgreSQL refuses root). */
export function spawnOwn(
  command: string,
  args: readonly string[],
  options: { user?: string; cwd?: string } = {},
): OwnProcess {
  const asUser = options.user !== undefined && process.getuid?.() === 0;
  const wrapped = hasSetpriv
    ? [
        'setpriv',
        ...(asUser ? [`--reuid=${options.user}`, `--regid=${options.user}`, '--init-groups'] : []),
        '--pdeathsig',
        'SIGKILL',
        '--',
        command,
        ...args,
      ]
    : asUser
      ? ['runuser', '-u', options.user!, '--', command, ...args]
      : [command, ...args];
  const child = spawn(wrapped[0]!, wrapped.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = once(child, 'exit').then(() => undefined);
  return {
    child,
    output: () => output,
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    async stop(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Runs a command to its end (initdb, pg_basebackup); throws with its output when it fails. */
export function runOwn(command: string, args: readonly string[], options: { user?: string } = {}): string {
  const asUser = options.user !== undefined && process.getuid?.() === 0;
  const [file, ...rest] = asUser ? ['runuser', '-u', options.user!, '--', command, ...args] : [command, ...args];
  const result = spawnSync(file!, rest, { encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (${result.status}): ${result.stdout}${result.stderr}`);
  return result.stdout;
}

export { until } from './until.js';
