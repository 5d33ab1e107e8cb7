import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';
import { buildCheckpointPayload, signCheckpoint } from '#lib/ledger/checkpoint.js';
import { auditPath, buildSortedMerkleTree, toHex, treeRoot } from '#lib/ledger/merkle-tree.js';
import { canonicalReceipt, treeKeyOf, type Receipt } from '#lib/ledger/receipt.js';
import type { DomainEvent } from '../events/types.js';
import type { SigningKey } from '../keys/key-ring.js';
import type { Storage, Stores } from '../storage/interface.js';
import { receiptFromEvent } from './receipt-from-event.js';
import type { TransparencyLog } from './transparency-log.js';

/** Runs in the transaction that appended `receipt` (see `Ledger.follow`). */
export type ReceiptFollower = (tx: Stores, receipt: Receipt, hash: string) => Promise<void>;

export interface LedgerOptions {
  storage: Storage;
  /** The signing key of the moment (the key ring's current key). */
  signingKey: () => SigningKey;
  sealIntervalMs: number;
  sealMaxReceipts: number;
  /** Given to a ledger that does not seal (a worker): called once `sealMaxReceipts` were appended here since the last call. */
  requestSeal?: () => void;
  now: () => number;
  metrics?: Registry;
  onError?: (error: unknown) => void;
  /** The C2SP transparency log each sealed epoch is appended to (docs/ledger.md#verifying-with-transparency-tools). */
  log?: TransparencyLog;
}

/**
 * The receipt ledger: records a receipt for every domain event inside the event's own
 * transaction, and seals pending receipts into signed, chained epochs.
 *
 * Sealing runs at most every `sealIntervalMs`, or as soon as `sealMaxReceipts` are pending.
 * One epoch is sealed in one transaction (tree, checkpoint and placements land together), and
 * the next epoch number and `prev` are read inside it, so a crash loses no epoch and no two
 * sealers can seal the same one (the sealing lock makes replicas take turns); whatever was pending at a crash is sealed at the next start.
 */
export class Ledger {
  private timer: NodeJS.Timeout | null = null;
  private sealing: Promise<number[]> | null = null;
  private appendedSinceSeal = 0;
  private sealScheduled = false;
  private closed = false;
  private readonly appended?: Counter;
  private readonly followers: ReceiptFollower[] = [];
  private readonly sealed?: Counter;

  /** The C2SP transparency log over the sealed epochs, when the ledger keeps one. */
  get transparency(): TransparencyLog | undefined {
    return this.options.log;
  }

  constructor(private readonly options: LedgerOptions) {
    if (options.metrics) {
      this.appended = new Counter({
        name: 'keyplane_receipts_total',
        help: 'Receipts written, by kind.',
        labelNames: ['kind'],
        registers: [options.metrics],
      });
      this.sealed = new Counter({
        name: 'keyplane_ledger_epochs_total',
        help: 'Ledger epochs sealed.',
        registers: [options.metrics],
      });
    }
  }

  /**
   * The event-bus subscriber: writes the receipt with `tx` and returns its hash. A failure
   * here fails the caller's transaction, so an action whose receipt cannot be written does
   * not happen.
   */
  readonly record = async (tx: Stores, event: DomainEvent): Promise<string> => {
    const receipt = receiptFromEvent(event);
    const { body, hash } = canonicalReceipt(receipt);
    await tx.receipts.append(receipt, hash, this.options.now(), body);
    for (const follower of this.followers) await follower(tx, receipt, hash);
    this.appended?.inc({ kind: receipt.kind });
    if (++this.appendedSinceSeal >= this.options.sealMaxReceipts && this.options.requestSeal) {
      // A worker never seals: it asks the process that does, once per batch.
      this.appendedSinceSeal = 0;
      this.options.requestSeal();
    } else if (this.appendedSinceSeal >= this.options.sealMaxReceipts && !this.sealScheduled) {
      // After the caller's transaction: the seal's own transaction waits for it anyway.
      this.sealScheduled = true;
      setImmediate(() => {
        this.sealScheduled = false;
        if (!this.closed) void this.sealNow().catch((error: unknown) => this.options.onError?.(error));
      });
    }
    return hash;
  };

  /**
   * Adds a subscriber that queues its outbox rows beside each receipt, in the receipt's
   * transaction (webhooks): the row exists exactly when the receipt does.
   */
  follow(follower: ReceiptFollower): void {
    this.followers.push(follower);
  }

  /** Seals whatever is pending (left over from a crash too) and starts the timer. */
  async start(): Promise<void> {
    const { log, storage } = this.options;
    if (log) {
      // Epochs sealed before the transparency log existed enter it first, in order.
      for (;;) {
        const appended = await storage.transaction(async (tx) => {
          await tx.receipts.lockSealing();
          return log.catchUp(tx);
        });
        if (appended === 0) break;
      }
    }
    await this.sealNow();
    void log?.requestCosignatures().catch((error: unknown) => this.options.onError?.(error));
    if (this.closed) return;
    this.timer = setInterval(() => {
      if (!this.sealing && !this.closed) void this.sealNow().catch((error: unknown) => this.options.onError?.(error));
    }, this.options.sealIntervalMs);
    this.timer.unref();
  }

  /**
   * Seals the receipts pending now (in epochs of at most `sealMaxReceipts`) and returns the
   * epochs sealed. Calls made while a seal runs wait for it and then seal what came since.
   */
  async sealNow(): Promise<number[]> {
    const previous = this.sealing;
    const run = (async () => {
      if (previous) await previous.catch(() => undefined);
      const epochs: number[] = [];
      // Keep going only while epochs come out full (a backlog): receipts that arrive while a
      // seal runs wait for the next tick, so epochs are not sealed more often than configured.
      for (;;) {
        const sealed = await this.sealOne();
        if (sealed === null) {
          if (epochs.length > 0)
            void this.options.log?.requestCosignatures().catch((error: unknown) => this.options.onError?.(error));
          return epochs;
        }
        epochs.push(sealed.epoch);
        if (sealed.size < this.options.sealMaxReceipts) {
          void this.options.log?.requestCosignatures().catch((error: unknown) => this.options.onError?.(error));
          return epochs;
        }
      }
    })();
    this.sealing = run;
    try {
      return await run;
    } finally {
      if (this.sealing === run) this.sealing = null;
    }
  }

  /** Stops the timer and waits for a seal in progress. Pending receipts stay for the next start. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sealing?.catch(() => undefined);
    await this.options.log?.settle();
  }

  /**
   * Imports receipts made elsewhere (bench:growth seeds a store this way) as one new sealed epoch,
   * exactly as `sealNow` would seal them had they been appended: the same tree, checkpoint and
   * transparency log entry, with each receipt written once, already placed. At most
   * `sealMaxReceipts` at a time; pending receipts are left for the sealer.
   */
  async importSealed(
    receipts: ReadonlyArray<{ receipt: Receipt; hash: string; body: string; createdAt: number }>,
  ): Promise<number> {
    if (receipts.length === 0 || receipts.length > this.options.sealMaxReceipts)
      throw new RangeError(`an imported epoch holds 1 to ${this.options.sealMaxReceipts} receipts`);
    const epoch = await this.options.storage.transaction(async (tx) => {
      await tx.receipts.lockSealing();
      const pending = receipts.map((r) => ({ hash: r.hash, treeKey: treeKeyOf(r.hash) }));
      return this.sealEpoch(tx, pending, (epoch, placements) => {
        // Written in the order given, as appends would have been (the audit export's order).
        const placed = new Map(placements.map((p) => [p.hash, p]));
        return tx.receipts.appendSealed(
          epoch,
          receipts.map((r) => ({ ...placed.get(r.hash)!, body: r.body, kind: r.receipt.kind, createdAt: r.createdAt })),
        );
      });
    });
    this.sealed?.inc();
    for (const r of receipts) this.appended?.inc({ kind: r.receipt.kind });
    return epoch.epoch;
  }

  private async sealOne(): Promise<{ epoch: number; size: number } | null> {
    this.appendedSinceSeal = 0;
    const { storage, sealMaxReceipts } = this.options;
    const epoch = await storage.transaction(async (tx) => {
      // Replicas sharing one database seal one at a time; whoever waited reads the epoch the
      // other just sealed, and the receipts it left, after the lock is granted.
      await tx.receipts.lockSealing();
      const pending = await tx.receipts.pending(sealMaxReceipts);
      if (pending.length === 0) return null;
      return this.sealEpoch(tx, pending, (epoch, placements) => tx.receipts.assignEpoch(epoch, placements));
    });
    if (epoch !== null) this.sealed?.inc();
    return epoch;
  }

  /** Seals `pending` as the next epoch in `tx` (which holds the sealing lock); `place` writes the placements. */
  private async sealEpoch(
    tx: Stores,
    pending: Array<{ hash: string; treeKey: Buffer }>,
    place: (epoch: number, placements: Array<{ hash: string; index: number; path: Buffer[] }>) => Promise<void>,
  ): Promise<{ epoch: number; size: number }> {
    const { now, signingKey } = this.options;
    const latest = await tx.receipts.latestCheckpoint();
    const epoch = (latest?.epoch ?? 0) + 1;
    const tree = buildSortedMerkleTree(pending.map((p) => p.treeKey));
    const hashByKey = new Map(pending.map((p) => [p.treeKey.toString('hex'), p.hash]));
    const root = toHex(treeRoot(tree));
    const payload = buildCheckpointPayload({
      epoch,
      root,
      size: tree.size,
      previous: latest?.jws ?? null,
      now: now(),
    });
    const jws = await signCheckpoint(payload, signingKey());
    await tx.receipts.insertCheckpoint({ epoch, jws, root, size: tree.size, prev: payload.prev, sealedAt: now() });
    await place(
      epoch,
      tree.keys.map((key, index) => ({
        hash: hashByKey.get(key.toString('hex'))!,
        index,
        path: auditPath(tree, index),
      })),
    );
    // The epoch enters the transparency log in the same transaction (after any left behind).
    await this.options.log?.catchUp(tx);
    return { epoch, size: tree.size };
  }
}
