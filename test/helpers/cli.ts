import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** Runs the CLI from source (tsx), exactly as `npx keyplane` runs the built one. */
export const CLI = ['--import', 'tsx', 'cli/src/main.ts'];

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [...CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** Starts a long-running command and resolves once it prints `listening <url>`. */
export async function startCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 20_000): Promise<Server> {
  const child = spawn(process.execPath, [...CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
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
