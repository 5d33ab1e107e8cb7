/** Exit codes of every command: documented in docs/cli.md. */
export const EXIT = {
  ok: 0,
  /** The operation ran and failed (a proof did not verify, a service could not start). */
  failed: 1,
  /** The command was used wrongly: unknown flag, invalid configuration, unreachable peer. */
  usage: 2,
} as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
