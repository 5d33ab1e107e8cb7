import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { JSONWebKeySet } from 'jose';
import { isReceiptHash } from '#lib/ledger/receipt.js';
import type { InclusionProof } from '#lib/ledger/verify-receipt.js';
import { baseUrl, requestJson } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';
import { TransparencyRefusal, verifyInTransparencyLog } from './receipt-witnesses.js';

const JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Not verified: the verdict goes to stdout and the exit code is 1. */
class NotVerified extends CliError {
  constructor(message: string) {
    super(message, EXIT.failed);
  }
}

async function getJson(url: string) {
  return requestJson('GET', url);
}

/** The verifiers (and jose under them), loaded when a receipt is checked, not on every start of the CLI. */
async function verifiers() {
  const [
    { createLocalJWKSet },
    { decodeCheckpoint, verifyCheckpoint },
    { verifyCheckpointChain },
    { verifyReceiptProof },
  ] = await Promise.all([
    import('jose'),
    import('#lib/ledger/checkpoint.js'),
    import('#lib/ledger/verify-chain.js'),
    import('#lib/ledger/verify-receipt.js'),
  ]);
  return { createLocalJWKSet, decodeCheckpoint, verifyCheckpoint, verifyCheckpointChain, verifyReceiptProof };
}

function readPinned(value: string, decodeCheckpoint: (jws: string) => unknown): string {
  const text = existsSync(value) ? readFileSync(value, 'utf8').trim() : value.trim();
  if (!JWS.test(text)) throw new CliError('--trust-checkpoint must be a compact JWS or a file holding one', EXIT.usage);
  try {
    decodeCheckpoint(text);
  } catch (error) {
    throw new CliError(`--trust-checkpoint: ${(error as Error).message}`, EXIT.usage);
  }
  return text;
}

export async function verifyReceiptCommand(hash: string, options: VerifyOptions): Promise<void> {
  const required = options.witnesses === undefined ? undefined : Number(options.witnesses);
  if (required !== undefined && (!Number.isSafeInteger(required) || required < 0 || required > 100))
    throw new CliError('--witnesses must be a whole number from 0 to 100', EXIT.usage);
  if (!isReceiptHash(hash)) throw new CliError("HASH must be the receipt's 64 lower-case hex characters", EXIT.usage);
  const base = baseUrl(options.controlPlane);
  const { createLocalJWKSet, decodeCheckpoint, verifyCheckpoint, verifyCheckpointChain, verifyReceiptProof } =
    await verifiers();
  const pinned =
    options.trustCheckpoint === undefined ? undefined : readPinned(options.trustCheckpoint, decodeCheckpoint);

  progress(`fetching receipt ${hash} from ${base}`);
  const found = await getJson(`${base}/receipts/${hash}`);
  if (found.status === 404) throw new NotVerified(`not verified: ${base} knows no receipt ${hash}`);
  if (found.status !== 200 || found.body['ok'] !== true)
    throw new CliError(`${base} answered ${found.status} (${String(found.body['reason'] ?? 'no reason')})`, EXIT.usage);
  if (found.body['pending'] === true)
    throw new NotVerified(
      `not verified: receipt ${hash} is pending, its epoch is not sealed yet (try again in a few seconds)`,
    );

  progress(`fetching the JWKS from ${base}/.well-known/jwks.json`);
  const jwksAnswer = await getJson(`${base}/.well-known/jwks.json`);
  if (jwksAnswer.status !== 200 || !Array.isArray(jwksAnswer.body['keys']))
    throw new CliError(`${base} served no JWKS`, EXIT.usage);
  const keys = createLocalJWKSet(jwksAnswer.body as unknown as JSONWebKeySet);

  const checkpoint = found.body['checkpoint'];
  if (typeof checkpoint !== 'string') throw new NotVerified('not verified: the answer carries no checkpoint');
  progress('checking the canonical hash, the checkpoint signature and the audit path');
  const verdict = await verifyReceiptProof(
    { hash, receipt: found.body['receipt'], proof: found.body['proof'] as InclusionProof, checkpoint },
    keys,
  );
  if (!verdict.ok) throw new NotVerified(`not verified: ${verdict.failure}`);
  const { epoch, size, at } = verdict.checkpoint;
  const { kid } = decodeCheckpoint(checkpoint);
  progress(
    `checked: leaf ${(found.body['proof'] as InclusionProof).index} of ${size} in epoch ${epoch}, checkpoint signed by ${kid} at ${at}`,
  );

  if (pinned !== undefined) {
    progress(`following the checkpoint chain to the pinned epoch ${decodeCheckpoint(pinned).payload.epoch}`);
    try {
      await verifyCheckpoint(pinned, keys);
    } catch (error) {
      throw new NotVerified(
        `not verified: the pinned checkpoint does not verify against the JWKS (${(error as Error).message})`,
      );
    }
    const chain = await verifyCheckpointChain(
      checkpoint,
      pinned,
      async (n) => {
        const answer = await getJson(`${base}/receipts/checkpoints/${n}`);
        if (answer.status !== 200 || typeof answer.body['checkpoint'] !== 'string')
          throw new NotVerified(`not verified: ${base} serves no checkpoint for epoch ${n}`);
        return answer.body['checkpoint'];
      },
      keys,
    );
    if (!chain.ok) throw new NotVerified(`not verified: ${chain.failure}`);
    progress(`checked: chained to the pinned checkpoint through ${chain.followed.length} checkpoint(s)`);
  }
  let logged = '';
  if (required !== undefined) {
    try {
      logged = await verifyInTransparencyLog({
        base,
        hash,
        tlogIndex: found.body['tlog_index'],
        treeSize: found.body['tree_size'],
        required,
        witnessKeys: options.witnessKey ?? [],
        ...(options.logKey ? { logKeys: options.logKey } : {}),
      });
    } catch (error) {
      if (error instanceof TransparencyRefusal) throw new NotVerified(`not verified: ${error.message}`);
      throw error;
    }
    progress(`checked: ${logged}`);
  }
  say(
    `verified: receipt ${hash} is in epoch ${epoch} (leaf ${(found.body['proof'] as InclusionProof).index} of ${size}), checkpoint signed by ${kid}${pinned ? ', chained to the pinned checkpoint' : ''}${logged ? `; transparency log: ${logged}` : ''}`,
  );
}

interface VerifyOptions {
  controlPlane?: string;
  trustCheckpoint?: string;
  witnesses?: string;
  witnessKey?: string[];
  logKey?: string[];
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function receiptCommand(program: Command): void {
  const receipt = program.command('receipt').description('Verify ledger receipts.');
  receipt
    .command('verify')
    .description(
      'Verify a receipt: canonical hash, RFC 9162 audit path, checkpoint signature (JWKS), with --trust-checkpoint the chain to a pinned checkpoint, and with --witnesses its place in the transparency log under a witnessed checkpoint. Exit 0 verified, 1 not verified, 2 usage or network error.',
    )
    .argument('<hash>', 'the receipt hash (64 lower-case hex characters)')
    .option('--control-plane <url>', 'base URL (issuer) of the control plane')
    .option('--trust-checkpoint <jws-or-file>', 'a checkpoint you trust (compact JWS, or a file holding one)')
    .option(
      '--witnesses <n>',
      'also check the receipt in the C2SP transparency log, from its signed note and tiles, and refuse a note cosigned by fewer than n of the --witness-key witnesses',
    )
    .option('--witness-key <vkey>', 'a witness you trust, as its C2SP verifier key (repeatable)', collect)
    .option(
      '--log-key <vkey>',
      "the log's note verifier key to trust (repeatable; default: what the control plane serves)",
      collect,
    )
    .action(async (hash: string, options: VerifyOptions) => {
      try {
        await verifyReceiptCommand(hash, options);
      } catch (error) {
        if (error instanceof NotVerified) {
          say(error.message);
          throw new CliError('receipt not verified', EXIT.failed);
        }
        throw error;
      }
    });
}
