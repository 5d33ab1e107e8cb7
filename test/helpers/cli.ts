import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const BUILT = 'dist/cli/src/main.js';
const SOURCES = ['cli', 'config', 'control-plane/src', 'gateway/src', 'lib'];

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts') || entry.name.endsWith('.sql'))
      newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Runs what `npx keyplane` runs: the build in dist/ (`npm test` builds it first), or the sources
 * through tsx when the build is missing or older than them (a targeted run after an edit).
 */
export const CLI =
  existsSync(BUILT) && statSync(BUILT).mtimeMs >= Math.max(...SOURCES.map(newestSource))
    ? [BUILT]
    : ['--import', 'tsx', 'cli/src/main.ts'];

/**
 * The environment of a Node.js child of a test (the CLI, a fixture script). Coverage is not
 * recorded in children (tap's processinfo follows every spawn): they run dist/, whose source maps
 * point at the same .ts files as the in-process tests, and the two differently shaped maps of one
 * file do not merge into a true figure. Excluding every file (`_TAPJS_PROCESSINFO_COV_EXCLUDE_`)
 * kept their coverage out of the report, but V8 still counted every block of the child and wrote
 * it out at exit; `_TAPJS_PROCESSINFO_COVERAGE_=0` does not start V8's coverage in the child at
 * all (docs/platform.md#measured-times). What the report counts is the same.
 */
export function childEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...env, _TAPJS_PROCESSINFO_COVERAGE_: '0', _TAPJS_PROCESSINFO_COV_EXCLUDE_: '/./' };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [...CLI, ...args], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

export interface Server {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts a long-running command and resolves once it prints `listening <url>`. The wait is generous
 * because a server loads all of its code first, which on a loaded 2-core machine takes tens of seconds.
 */
export function startCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<Server> {
  return startListening(process.execPath, [...CLI, ...args], { env, timeoutMs });
}

/** Starts any program that prints `listening <url>` once it serves (a guide's example app too). */
export async function startListening(
  file: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<Server> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const child = spawn(file, args, {
    env: childEnv(options.env ?? {}),
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Nobody will stop a server that never said where it listens: its pipes would keep the test alive.
      child.kill('SIGKILL');
      reject(new Error(`no listening line within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.stdout!.on('data', (d) => {
      stdout += d;
      const match = /^listening (\S+)$/m.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening; stderr: ${stderr}`));
    });
  });
  return {
    child,
    url,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      child.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}
