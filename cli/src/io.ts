import { AsyncLocalStorage } from 'node:async_hooks';

/** Where a command's output goes: the process's streams, or the caller's writers when the program runs in-process. */
export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
}

export const processOutput: Output = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

// Per run rather than a module variable, so two in-process runs that overlap keep their output apart.
const current = new AsyncLocalStorage<Output>();

/** Runs `work` with every `say`, `warn` and `progress` inside it going to `output`. */
export function withOutput<T>(output: Output, work: () => Promise<T>): Promise<T> {
  return current.run(output, work);
}

const output = () => current.getStore() ?? processOutput;

/** Output conventions: results on stdout, progress and warnings on stderr. */
export function say(line: string): void {
  output().stdout(line + '\n');
}

export function warn(line: string): void {
  output().stderr(`warning: ${line}\n`);
}

export function progress(line: string): void {
  output().stderr(`${line}\n`);
}

/** Keeps a server running until SIGTERM or SIGINT, then drains it and exits 0. */
export function runUntilSignal(close: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      progress(`${signal}: draining and closing`);
      close().then(
        () => {
          resolve();
          process.exit(0);
        },
        (error: unknown) => {
          process.stderr.write(`error while closing: ${(error as Error).message}\n`);
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
