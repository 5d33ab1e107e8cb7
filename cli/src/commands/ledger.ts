import type { Command } from 'commander';
import { CliError, EXIT } from '../exit.js';
import { dataDirOptions, flagsToConfig } from '../options.js';
import { progress, say } from '../io.js';

export function ledgerCommand(program: Command): void {
  const ledger = program.command('ledger').description('Inspect the receipt ledger offline.');
  dataDirOptions(
    ledger
      .command('audit')
      .description(
        'Recompute every epoch from the stored receipts; report the first epoch whose root (or signature, or chain link) differs. Exit 0 intact, 1 not.',
      ),
  ).action(async (options: Record<string, unknown>) => {
    const [{ loadControlPlaneConfig }, { describeDatabase }, { auditLedgerOffline }] = await Promise.all([
      import('#config/load.js'),
      import('../../../control-plane/src/operator-tasks/database.js'),
      import('../../../control-plane/src/operator-tasks/ledger.js'),
    ]);
    const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
    progress(`auditing the ledger in ${describeDatabase(config)}`);
    const result = await auditLedgerOffline(config, progress);
    if (result.failure) {
      say(`ledger audit failed at ${result.failure}`);
      throw new CliError(`ledger audit failed (${result.epochs} epoch(s) before it are intact)`, EXIT.failed);
    }
    say(
      `ledger intact: ${result.epochs} epoch(s), ${result.receipts} sealed receipt(s), chain and signatures verified; ${result.pending} pending`,
    );
  });
  dataDirOptions(
    ledger
      .command('rotate-note-key')
      .description(
        "Add a new Ed25519 note key for the transparency log's checkpoints; the old key goes on signing beside it for --overlap-days, so witnesses that pinned it keep cosigning. Running servers pick it up within 10 s. Prints the new verifier key.",
      )
      .option('--overlap-days <n>', 'days the old key goes on signing', '14'),
  ).action(async (options: Record<string, unknown>) => {
    const days = Number(options['overlapDays']);
    if (!Number.isInteger(days) || days < 1 || days > 365)
      throw new CliError('--overlap-days must be a whole number from 1 to 365', EXIT.usage);
    const [{ loadControlPlaneConfig }, { rotateNoteKeyOffline }] = await Promise.all([
      import('#config/load.js'),
      import('../../../control-plane/src/operator-tasks/ledger.js'),
    ]);
    const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
    const vkey = await rotateNoteKeyOffline(config, days);
    say(`new note key: ${vkey} (the old one signs beside it for ${days} day(s))`);
  });
}
