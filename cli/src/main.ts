#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../../config/load.js';
import { MigrationError } from '../../control-plane/src/storage/migration-error.js';
import { accountsCommands } from './commands/accounts.js';
import { agentCommands } from './commands/agent.js';
import { backupCommand } from './commands/backup.js';
import { clientsCommands } from './commands/clients.js';
import { controlPlaneCommand } from './commands/control-plane.js';
import { gatewayCommand } from './commands/gateway.js';
import { keysCommand } from './commands/keys.js';
import { ledgerCommand } from './commands/ledger.js';
import { migrateCommand } from './commands/migrate.js';
import { receiptCommand } from './commands/receipt.js';
import { rolloutCommands } from './commands/rollout.js';
import { receiptsCommands } from './commands/receipts.js';
import { sessionsCommands } from './commands/sessions.js';
import { upCommand } from './commands/up.js';
import { CliError, EXIT } from './exit.js';

const program = new Command()
  .name('keyplane')
  .description('Keyplane: passkey-first identity and security plane.')
  .version('0.1.0')
  .exitOverride()
  .showHelpAfterError();

controlPlaneCommand(program);
gatewayCommand(program);
upCommand(program);
backupCommand(program);
migrateCommand(program);
keysCommand(program);
receiptCommand(program);
ledgerCommand(program);
accountsCommands(program);
agentCommands(program);
rolloutCommands(program);
clientsCommands(program);
sessionsCommands(program);
receiptsCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.exitCode = exitCodeFor(error);
}

function exitCodeFor(error: unknown): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(`keyplane: ${error.message}\n`);
    return EXIT.usage;
  }
  if (error instanceof CliError) {
    process.stderr.write(`keyplane: ${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof MigrationError) {
    process.stderr.write(`keyplane: ${error.message}\n`);
    return EXIT.failed;
  }
  const e = error as NodeJS.ErrnoException;
  process.stderr.write(`keyplane: ${e.code === 'EADDRINUSE' ? `address in use (${e.message})` : e.message}\n`);
  return EXIT.failed;
}
