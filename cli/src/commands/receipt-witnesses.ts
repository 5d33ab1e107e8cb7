import { CliError, EXIT } from '../exit.js';
import { progress } from '../io.js';

/** Not verified: the caller prints the verdict and exits 1. */
export class TransparencyRefusal extends Error {}

const tlog = () =>
  Promise.all([
    import('#lib/ledger/transparency/index.js'),
    import('#lib/ledger/merkle-tree.js'),
    import('#lib/ledger/receipt.js'),
  ]);

async function fetchOk(url: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new CliError(`${url}: ${(error as Error).message}`, EXIT.usage);
  }
  if (response.status !== 200) throw new TransparencyRefusal(`${url} answered ${response.status}`);
  return response;
}

/**
 * The receipt in the transparency log, checked from the signed note and tiles alone: the note
 * signed by the log's key, cosigned by at least `required` of the witnesses the verifier names,
 * and the receipt's tree key at `tlog_index` under that note's root.
 */
export async function verifyInTransparencyLog(input: {
  base: string;
  hash: string;
  tlogIndex: unknown;
  treeSize: unknown;
  required: number;
  witnessKeys: readonly string[];
  logKeys?: readonly string[];
}): Promise<string> {
  const [T, { hashLeaf, rootFromInclusionProof }, { treeKeyOf }] = await tlog();
  const parseKeys = (keys: readonly string[], flag: string) =>
    keys.map((k) => {
      try {
        return T.parseVerifierKey(k);
      } catch (error) {
        throw new CliError(`${flag}: ${(error as Error).message}`, EXIT.usage);
      }
    });
  const witnesses = parseKeys(input.witnessKeys, '--witness-key');
  if (witnesses.length < input.required)
    throw new CliError(`--witnesses ${input.required} needs at least that many --witness-key`, EXIT.usage);
  if (!Number.isSafeInteger(input.tlogIndex) || !Number.isSafeInteger(input.treeSize))
    throw new TransparencyRefusal('the receipt is not in the transparency log yet');
  const tlogIndex = input.tlogIndex as number;
  const treeSize = input.treeSize as number;
  const logKeys = parseKeys(
    input.logKeys ??
      (await (await fetchOk(`${input.base}/receipts/checkpoint/key`)).text()).split('\n').filter(Boolean),
    '--log-key',
  );

  // Cosignatures are gathered just after an epoch is sealed: a note read a moment too early is read again.
  let note: ReturnType<typeof T.parseNote> | undefined;
  let cosigned: string[] = [];
  for (let attempt = 0; attempt < 10; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 500));
    progress(`fetching the checkpoint note from ${input.base}/receipts/checkpoint`);
    try {
      note = T.parseNote(await (await fetchOk(`${input.base}/receipts/checkpoint`)).text());
    } catch (error) {
      if (error instanceof T.NoteFormatError) throw new TransparencyRefusal(`the checkpoint note: ${error.message}`);
      throw error;
    }
    const read = note;
    if (!logKeys.some((k) => T.isSignedBy(read, k)))
      throw new TransparencyRefusal("the checkpoint note carries no valid signature by the log's key");
    cosigned = witnesses.filter((w) => T.cosignatureTime(read, w) !== null).map((w) => w.name);
    if (cosigned.length >= input.required) break;
  }
  if (!note || cosigned.length < input.required)
    throw new TransparencyRefusal(
      `the checkpoint is cosigned by ${cosigned.length} of the named witnesses, fewer than ${input.required}`,
    );
  const checkpoint = T.parseCheckpoint(note.text);
  if (checkpoint.size < treeSize) throw new TransparencyRefusal('the checkpoint is older than the receipt');

  progress(`computing the inclusion proof of leaf ${tlogIndex} of ${checkpoint.size} from tiles`);
  const tree = new T.TiledTree(checkpoint.size, async (level, index, width) =>
    Buffer.from(
      await (await fetchOk(`${input.base}/receipts/${T.formatTilePath({ level, index, width })}`)).arrayBuffer(),
    ),
  );
  const path = await tree.inclusionProof(tlogIndex);
  const root = rootFromInclusionProof(hashLeaf(treeKeyOf(input.hash)), tlogIndex, checkpoint.size, path);
  if (!root?.equals(checkpoint.root))
    throw new TransparencyRefusal('the receipt is not at its tlog_index under the checkpoint root');
  return `leaf ${tlogIndex} of ${checkpoint.size} in ${checkpoint.origin}, cosigned by ${cosigned.join(', ') || 'no witness'}`;
}
