import { runProgram } from '../../cli/src/program.js';
import type { CliResult } from './cli.js';

/**
 * Runs a command in this process through the program `main.ts` runs, with the same exit code and
 * the same stdout/stderr split, without a Node start per call (and counted in coverage). `runCli`
 * stays for what only a process shows: signals, the `listening` line, main's own exit. `env` is set
 * on process.env for the run and restored after, so in-process runs must not overlap. An offline
 * command that writes the SQLite store of a server running in this process, while it serves, runs
 * with `runCli`: SQLite's busy wait would block the event loop the server needs to commit.
 * Apart from cli.ts so that suites of the services, which spawn the CLI, never load it themselves.
 */
export async function runInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  Object.assign(process.env, env);
  let stdout = '';
  let stderr = '';
  try {
    const code = await runProgram(args, {
      stdout: (text) => void (stdout += text),
      stderr: (text) => void (stderr += text),
    });
    return { code, stdout, stderr };
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}
