/** Output conventions: results on stdout, progress and warnings on stderr. */
export function say(line: string): void {
  process.stdout.write(line + '\n');
}

export function warn(line: string): void {
  process.stderr.write(`warning: ${line}\n`);
}

export function progress(line: string): void {
  process.stderr.write(`${line}\n`);
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

/** Announces a started server (`listening URL` on stdout) and keeps it up until SIGTERM or SIGINT. */
export function serveUntilSignal(running: { url: string; close(): Promise<void> }): Promise<void> {
  say(`listening ${running.url}`);
  return runUntilSignal(() => running.close());
}
