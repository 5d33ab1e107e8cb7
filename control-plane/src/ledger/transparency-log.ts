import { hashLeaf } from '#lib/ledger/merkle-tree.js';
import { formatCheckpoint } from '#lib/ledger/transparency/checkpoint-note.js';
import { cosignatureTime } from '#lib/ledger/transparency/cosignature.js';
import { parseNote, parseVerifierKey, signNote, type NoteVerifier } from '#lib/ledger/transparency/signed-note.js';
import {
  appendToTiles,
  formatEntryBundle,
  parseTilePath,
  TILE_WIDTH,
  TiledTree,
  tileWidth,
  type TileSource,
} from '#lib/ledger/transparency/tiles.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { Stores, Storage } from '../storage/interface.js';
import { logOrigin, type NoteKeyRing } from './note-keys.js';

/** A witness from `ledger.witnesses`, its key parsed. */
export interface ConfiguredWitness {
  name: string;
  url: string;
  key: NoteVerifier;
}

export interface TransparencyLogOptions {
  storage: Storage;
  noteKeys: NoteKeyRing;
  issuer: string;
  witnesses: ReadonlyArray<{ name: string; url: string; key: string }>;
  now: () => number;
  /** How long to wait for a witness (ms). */
  witnessTimeoutMs?: number;
  onError?: (error: unknown) => void;
}

/** Epochs appended per transaction when catching up on epochs sealed before the log existed. */
const CATCH_UP_BATCH = 50;

/** Reads tiles from the store (in a transaction, or outside one). */
export function storedTiles(stores: Pick<Stores, 'tlog'>): TileSource {
  return async (level, index) => {
    const hashes = await stores.tlog.tile(level, index);
    if (!hashes) throw new Error(`tile ${level}/${index} is missing`);
    return hashes;
  };
}

/**
 * The transparency log (docs/ledger.md#verifying-with-transparency-tools): one append-only RFC 6962
 * tree whose leaves are the sealed epochs' tree keys in epoch order, stored as C2SP tiles, its
 * checkpoint a signed note, cosigned by the configured witnesses.
 */
export class TransparencyLog {
  readonly origin: string;
  readonly witnesses: ConfiguredWitness[];
  private gathering: Promise<void> | null = null;

  get noteKeys(): NoteKeyRing {
    return this.options.noteKeys;
  }

  private gatherAgain = false;

  constructor(private readonly options: TransparencyLogOptions) {
    this.origin = logOrigin(options.issuer);
    this.witnesses = options.witnesses.map((w) => ({
      ...w,
      url: w.url.replace(/\/+$/, ''),
      key: parseVerifierKey(w.key),
    }));
  }

  /**
   * Appends a sealed epoch's keys (in its tree order) and signs the new checkpoint; call inside
   * the sealing transaction, after every earlier epoch is in the log.
   */
  async appendEpoch(tx: Stores, epoch: number, keys: readonly Buffer[]): Promise<void> {
    const head = await tx.tlog.head();
    const oldSize = head?.treeSize ?? 0;
    const writes = await appendToTiles(oldSize, keys.map(hashLeaf), (level, index) => tx.tlog.tile(level, index));
    const written = new Map(writes.map((w) => [`${w.level}/${w.index}`, w.hashes]));
    const stored = storedTiles(tx);
    const size = oldSize + keys.length;
    const tree = new TiledTree(
      size,
      async (level, index, width) => written.get(`${level}/${index}`) ?? stored(level, index, width),
    );
    const root = await tree.root();
    await tx.tlog.putTiles(writes);
    const note = signNote(formatCheckpoint({ origin: this.origin, size, root }), this.options.noteKeys.logSigners());
    await tx.tlog.appendEpoch(epoch, oldSize, size, note);
  }

  /** Appends, in order, epochs sealed before the log existed (a store upgraded in place). */
  async catchUp(tx: Stores): Promise<number> {
    const epochs = await tx.tlog.unloggedEpochs(CATCH_UP_BATCH);
    for (const epoch of epochs) await this.appendEpoch(tx, epoch, await tx.tlog.epochKeys(epoch));
    return epochs.length;
  }

  /** The latest checkpoint note with the cosignatures gathered for it; undefined while the log is empty. */
  async checkpoint(): Promise<string | undefined> {
    const head = await this.options.storage.tlog.head();
    if (!head) return undefined;
    const lines = await this.options.storage.tlog.cosignatures(head.epoch);
    return head.note + lines.map((l) => `${l}\n`).join('');
  }

  /**
   * A C2SP tlog-tiles resource (the path after `/receipts/`): a tile's hashes or an entry bundle
   * of tree keys. A partial tile is served while the tree holds at least that many hashes there:
   * a wider tile begins with the same ones (the tree only grows). `full` tiles never change.
   */
  async tile(path: string): Promise<{ body: Buffer; full: boolean }> {
    const address = path.startsWith('tile/') ? parseTilePath(path.slice('tile/'.length)) : null;
    if (!address) throw fail('unknown_tile', 'not a tlog-tiles path');
    const { tlog } = this.options.storage;
    const size = (await tlog.head())?.treeSize ?? 0;
    if (tileWidth(address.level === 'entries' ? 0 : address.level, address.index, size) < address.width)
      throw fail('unknown_tile', 'the tree is not that large yet');
    const full = address.width === TILE_WIDTH;
    if (address.level === 'entries')
      return { body: formatEntryBundle(await tlog.entries(address.index * TILE_WIDTH, address.width)), full };
    const hashes = await tlog.tile(address.level, address.index);
    if (!hashes) throw fail('unknown_tile', 'the tree is not that large yet');
    return { body: hashes.subarray(0, address.width * 32), full };
  }

  /** Asks every configured witness to cosign the latest checkpoint; runs one round at a time. */
  requestCosignatures(): Promise<void> {
    if (this.witnesses.length === 0) return Promise.resolve();
    if (this.gathering) {
      this.gatherAgain = true;
      return this.gathering;
    }
    const run = (async () => {
      do {
        this.gatherAgain = false;
        const head = await this.options.storage.tlog.head();
        if (!head) return;
        await Promise.all(
          this.witnesses.map((w) => this.askWitness(w, head).catch((error: unknown) => this.options.onError?.(error))),
        );
      } while (this.gatherAgain);
    })();
    this.gathering = run.finally(() => {
      this.gathering = null;
    });
    return this.gathering;
  }

  /** Waits for a round of cosignatures in progress. */
  async settle(): Promise<void> {
    await this.gathering?.catch(() => undefined);
  }

  private async askWitness(witness: ConfiguredWitness, head: { epoch: number; treeSize: number; note: string }) {
    const { storage } = this.options;
    let oldSize = await storage.tlog.cosignedSize(witness.name);
    // tlog-witness: a 409 names the size the witness holds; one retry from there.
    for (let attempt = 0; attempt < 2; attempt++) {
      if (oldSize > head.treeSize)
        throw new Error(`witness ${witness.name} holds size ${oldSize}, beyond this log's ${head.treeSize}`);
      const proof = await new TiledTree(head.treeSize, storedTiles(storage)).consistencyProof(oldSize);
      const body = `old ${oldSize}\n${proof.map((h) => `${h.toString('base64')}\n`).join('')}\n${head.note}`;
      const response = await fetch(`${witness.url}/add-checkpoint`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain; charset=utf-8' },
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.witnessTimeoutMs ?? 5000),
      });
      const text = (await response.text()).slice(0, 65_536);
      if (response.status === 409 && /^text\/x\.tlog\.size/.test(response.headers.get('content-type') ?? '')) {
        const held = /^(0|[1-9][0-9]{0,15})\n$/.exec(text);
        if (!held || attempt > 0) throw new Error(`witness ${witness.name} holds another size (${text.trim()})`);
        oldSize = Number(held[1]);
        continue;
      }
      if (response.status !== 200) throw new Error(`witness ${witness.name} answered ${response.status}`);
      const signed = parseNote(head.note);
      for (const line of text.split('\n').filter(Boolean)) {
        const withLine = { text: signed.text, signatures: parseNote(`${signed.text}\n${line}\n`).signatures };
        if (cosignatureTime(withLine, witness.key) !== null) {
          await storage.tlog.addCosignature(head.epoch, witness.name, line, this.options.now());
          return;
        }
      }
      throw new Error(`witness ${witness.name} sent no cosignature that verifies with its key`);
    }
  }
}
