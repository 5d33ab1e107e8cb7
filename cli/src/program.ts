import { Command, CommanderError } from 'commander';
import { ConfigError } from '#config/config-error.js';
import { isDatabaseSetupError } from '../../control-plane/src/operator-tasks/setup-errors.js';
import { accountsCommands } from './commands/accounts.js';
import { operatorsCommands } from './commands/operators.js';
import { ssfCommands } from './commands/ssf.js';
import { orgsCommands } from './commands/orgs.js';
import { apisCommands } from './commands/apis.js';
import { connectionsCommands } from './commands/connections.js';
import { agentCommands } from './commands/agent.js';
import { backupCommand } from './commands/backup.js';
import { clientsCommands } from './commands/clients.js';
import { controlPlaneCommand } from './commands/control-plane.js';
import { gatewayCommand } from './commands/gateway.js';
import { keysCommand } from './commands/keys.js';
import { ledgerCommand } from './commands/ledger.js';
import { loginCommand } from './commands/login.js';
import { migrateCommand } from './commands/migrate.js';
import { receiptCommand } from './commands/receipt.js';
import { rolloutCommands } from './commands/rollout.js';
import { receiptsCommands } from './commands/receipts.js';
import { restoreCommand } from './commands/restore.js';
import { sessionsCommands } from './commands/sessions.js';
import { upCommand } from './commands/up.js';
import { CliError, EXIT } from './exit.js';
import { processOutput, withOutput, type Output } from './io.js';

/**
 * The `keyplane` command tree. Registering a command loads its options and help only: each action
 * imports what it runs (the control plane, the gateway, storage, jose) when it runs, so `--help`,
 * usage errors and the HTTP clients start without them (docs/cli.md#start-up).
 */
export function buildProgram(output: Output = processOutput): Command {
  const program = new Command()
    .name('keyplane')
    .description('Keyplane: passkey-first identity and security plane.')
    // Set before the commands are added: each subcommand copies its parent's output and exit settings.
    .configureOutput({ writeOut: (text) => output.stdout(text), writeErr: (text) => output.stderr(text) })
    .version('0.1.0')
    .exitOverride()
    .showHelpAfterError();

  controlPlaneCommand(program);
  gatewayCommand(program);
  upCommand(program);
  backupCommand(program);
  restoreCommand(program);
  migrateCommand(program);
  keysCommand(program);
  receiptCommand(program);
  ledgerCommand(program);
  accountsCommands(program);
  operatorsCommands(program);
  ssfCommands(program);
  orgsCommands(program);
  agentCommands(program);
  rolloutCommands(program);
  clientsCommands(program);
  apisCommands(program);
  connectionsCommands(program);
  sessionsCommands(program);
  receiptsCommands(program);
  loginCommand(program);
  return program;
}

/**
 * Runs one command line (the arguments after `keyplane`) and answers its exit code (docs/cli.md#conventions).
 * `main.ts` runs it with the process's streams; tests run it in-process with their own writers.
 */
export async function runProgram(args: string[], output: Output = processOutput): Promise<number> {
  const program = buildProgram(output);
  return withOutput(output, async () => {
    try {
      await program.parseAsync(args, { from: 'user' });
      return EXIT.ok;
    } catch (error) {
      return exitCodeFor(error, output);
    }
  });
}

function exitCodeFor(error: unknown, output: Output): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof ConfigError) {
    output.stderr(`keyplane: ${error.message}\n`);
    return EXIT.usage;
  }
  if (error instanceof CliError) {
    output.stderr(`keyplane: ${error.message}\n`);
    return error.exitCode;
  }
  // The store is not one this release may use as configured (missing, unreachable, migrated by a
  // newer release, a changed migration): the operator fixes the setup, nothing failed mid-way.
  if (isDatabaseSetupError(error)) {
    output.stderr(`keyplane: ${error.message}\n`);
    return EXIT.usage;
  }
  const e = error as NodeJS.ErrnoException;
  output.stderr(`keyplane: ${e.code === 'EADDRINUSE' ? `address in use (${e.message})` : e.message}\n`);
  return EXIT.failed;
}
