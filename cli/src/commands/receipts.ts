import type { Command } from 'commander';
import type { JSONWebKeySet } from 'jose';
import type { CheckpointPayload } from '#lib/ledger/checkpoint.js';
import { baseUrl, requestJson } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';
import { exportReceipts, type ExportOptions } from './receipts-export.js';

interface Options {
  controlPlane?: string;
  json?: boolean;
  count?: string;
  interval?: string;
}

function positive(value: string | undefined, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new CliError(`${name} must be a whole number from 1 to ${max}`, EXIT.usage);
  return n;
}

/**
 * `keyplane receipts tail`: follows the ledger's signed checkpoints as they are sealed, checking
 * each one's signature against the JWKS and its `prev` link to the one before, and prints one
 * line (or one JSON object) per checkpoint. Receipts themselves are never listed (they are
 * found by hash only), so the checkpoints are what can be followed. Stops after `--count`
 * checkpoints or on SIGINT/SIGTERM (exit 0); a broken chain or signature is exit 1.
 */
export async function tailReceipts(options: Options, stop: AbortSignal): Promise<void> {
  const base = baseUrl(options.controlPlane);
  const count = positive(options.count, '--count', Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  const interval = positive(options.interval, '--interval', 1000, 3_600_000);
  // Loaded here rather than at the top, so the CLI's start (help, usage errors) never pays for jose.
  const { decodeCheckpoint, isPreviousCheckpoint, verifyCheckpoint } = await import('#lib/ledger/checkpoint.js');
  let keys = await loadKeys(base);
  let printed = 0;
  let last: { epoch: number; jws: string; payload: CheckpointPayload } | null = null;
  progress(
    `following the checkpoints of ${base} (every ${interval} ms${options.count ? `, ${count} checkpoint(s)` : ', until interrupted'})`,
  );

  const verify = async (jws: string): Promise<CheckpointPayload> => {
    try {
      return await verifyCheckpoint(jws, keys);
    } catch {
      // A rotation may have published a new key since we fetched the JWKS: fetch it once more.
      keys = await loadKeys(base);
      try {
        return await verifyCheckpoint(jws, keys);
      } catch (error) {
        throw new CliError(
          `checkpoint does not verify against ${base}'s JWKS: ${(error as Error).message}`,
          EXIT.failed,
        );
      }
    }
  };
  const emit = (jws: string, payload: CheckpointPayload) => {
    const { kid } = decodeCheckpoint(jws);
    if (options.json)
      say(
        JSON.stringify({
          epoch: payload.epoch,
          size: payload.size,
          root: payload.root,
          prev: payload.prev,
          at: payload.at,
          kid,
          checkpoint: jws,
        }),
      );
    else
      say(
        `epoch ${payload.epoch}  ${payload.size} receipt(s)  root ${payload.root}  at ${payload.at}  signed by ${kid}`,
      );
    printed++;
  };

  while (!stop.aborted && printed < count) {
    const latest = await fetchCheckpoint(base, 'latest', stop);
    if (latest) {
      const latestEpoch = decodeCheckpoint(latest).payload.epoch;
      if (last === null) {
        const payload = await verify(latest);
        last = { epoch: latestEpoch, jws: latest, payload };
        emit(latest, payload);
      } else {
        for (let epoch: number = last.epoch + 1; epoch <= latestEpoch && printed < count && !stop.aborted; epoch++) {
          const jws = epoch === latestEpoch ? latest : await fetchCheckpoint(base, String(epoch), stop);
          if (!jws) throw new CliError(`${base} serves no checkpoint for epoch ${epoch}`, EXIT.failed);
          const payload = await verify(jws);
          if (payload.epoch !== epoch || !isPreviousCheckpoint(payload, last.jws, last.payload)) {
            throw new CliError(
              `the chain breaks at epoch ${epoch}: its prev is not the checkpoint of epoch ${last.epoch}`,
              EXIT.failed,
            );
          }
          last = { epoch, jws, payload };
          emit(jws, payload);
        }
      }
    } else if (last === null) {
      progress('no epoch is sealed yet; waiting');
    }
    if (printed >= count || stop.aborted) break;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, interval);
      stop.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
  progress(`stopped after ${printed} checkpoint(s)`);
}

async function loadKeys(base: string) {
  const { createLocalJWKSet } = await import('jose');
  const answer = await requestJson('GET', `${base}/.well-known/jwks.json`);
  if (answer.status !== 200 || !Array.isArray(answer.body['keys']))
    throw new CliError(`${base} served no JWKS`, EXIT.usage);
  return createLocalJWKSet(answer.body as unknown as JSONWebKeySet);
}

async function fetchCheckpoint(base: string, which: string, stop: AbortSignal): Promise<string | null> {
  let answer;
  try {
    answer = await requestJson('GET', `${base}/receipts/checkpoints/${which}`, { signal: stop });
  } catch (error) {
    if (stop.aborted) return null;
    throw error;
  }
  if (answer.status === 404) return null;
  if (answer.status !== 200 || typeof answer.body['checkpoint'] !== 'string') {
    throw new CliError(
      `${base} answered ${answer.status} (${String(answer.body['reason'] ?? 'no reason')})`,
      EXIT.usage,
    );
  }
  return answer.body['checkpoint'];
}

export function receiptsCommands(program: Command): void {
  const receipts = program.command('receipts').description('Follow or export the receipt ledger.');
  receipts
    .command('export')
    .description(
      'Write receipts as NDJSON on stdout, one {hash, receipt} per line in ledger order, for a SIEM (docs/events.md#audit-export); progress on stderr. Needs KEYPLANE_ADMIN_TOKEN. Exit 0 done, 1 refused, 2 usage or network error.',
    )
    .option('--control-plane <url>', 'base URL (issuer) of the control plane')
    .option('--since <time>', 'only receipts written at or after this RFC 3339 time')
    .option('--until <time>', 'only receipts written before this RFC 3339 time')
    .option('--type <type>', 'only receipts of this type')
    .option('--subject <id>', 'only receipts naming this opaque id')
    .action((options: ExportOptions) => exportReceipts(options));
  receipts
    .command('tail')
    .description(
      'Print each new signed checkpoint as it is sealed, verified against the JWKS and chained to the one before. Stops on SIGINT or after --count. Exit 0 stopped, 1 a checkpoint did not verify, 2 usage or network error.',
    )
    .option('--control-plane <url>', 'base URL (issuer) of the control plane')
    .option('--count <n>', 'stop after this many checkpoints (the latest one counts as the first)')
    .option('--interval <ms>', 'how often to ask for a new checkpoint (milliseconds, default 1000)')
    .option('--json', 'print one JSON object per checkpoint')
    .action(async (options: Options) => {
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        await tailReceipts(options, stop.signal);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
