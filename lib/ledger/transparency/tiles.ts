import { hashChildren } from '../merkle-tree.js';

/**
 * C2SP tlog-tiles (https://c2sp.org/tlog-tiles) over an RFC 6962 tree: tile `L/N` holds up to
 * 256 consecutive hashes of level 8·L (leaf hashes at level 0), a partial tile `.p/W` the first
 * W of them. Everything here reads tiles through a callback, so the same code computes a tree
 * head while the sealer appends, and proofs in a client that has nothing but tiles.
 */

export const TILE_WIDTH = 256;
const TILE_HEIGHT = 8;
const HASH_SIZE = 32;

export interface TileAddress {
  /** A tile level, or `entries` for an entry bundle. */
  level: number | 'entries';
  index: number;
  /** 256 for a full tile, 1-255 for a partial one. */
  width: number;
}

/** `<N>` as 3-digit path elements, all but the last prefixed with `x` (`1234067` → `x001/x234/067`). */
export function tileIndexPath(index: number): string {
  const parts: string[] = [];
  let n = index;
  do {
    parts.unshift(String(n % 1000).padStart(3, '0'));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return parts.map((p, i) => (i < parts.length - 1 ? `x${p}` : p)).join('/');
}

export function formatTilePath(tile: TileAddress): string {
  return `tile/${tile.level}/${tileIndexPath(tile.index)}${tile.width < TILE_WIDTH ? `.p/${tile.width}` : ''}`;
}

/** Reads the part of a tile URL after `tile/`; null when it is not a tile path. */
export function parseTilePath(path: string): TileAddress | null {
  const match = /^(entries|[0-9]|[1-5][0-9]|6[0-3])\/((?:x[0-9]{3}\/)*)([0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/.exec(
    path,
  );
  if (!match) return null;
  const width = match[4] === undefined ? TILE_WIDTH : Number(match[4]);
  // A partial tile is 1 to 255 wide; a full one has no `.p/`.
  if (match[4] !== undefined && width >= TILE_WIDTH) return null;
  const elements = [
    ...match[2]!
      .split('/')
      .filter(Boolean)
      .map((e) => e.slice(1)),
    match[3]!,
  ];
  // tlog-tiles: no leading zero elements (x000/…), so every index has exactly one path.
  if (elements.length > 1 && elements[0] === '000') return null;
  const index = elements.reduce((n, e) => n * 1000 + Number(e), 0);
  if (!Number.isSafeInteger(index)) return null;
  return { level: match[1] === 'entries' ? 'entries' : Number(match[1]), index, width };
}

/** Hashes at tile level `level` of a tree of `size` leaves. */
function countAtLevel(level: number, size: number): number {
  return Math.floor(size / TILE_WIDTH ** level);
}

/** Width of tile `index` at `level` in a tree of `size` leaves: 256 when full, 0 when it does not exist yet. */
export function tileWidth(level: number, index: number, size: number): number {
  const count = countAtLevel(level, size);
  if ((index + 1) * TILE_WIDTH <= count) return TILE_WIDTH;
  return index * TILE_WIDTH < count ? count - index * TILE_WIDTH : 0;
}

/** The root of a complete tree over 2^k hashes packed back to back. */
function perfectRoot(hashes: Buffer): Buffer {
  let level = hashes;
  while (level.length > HASH_SIZE) {
    const up = Buffer.allocUnsafe(level.length / 2);
    for (let i = 0; i < level.length; i += 2 * HASH_SIZE)
      hashChildren(level.subarray(i, i + HASH_SIZE), level.subarray(i + HASH_SIZE, i + 2 * HASH_SIZE)).copy(up, i / 2);
    level = up;
  }
  return Buffer.from(level);
}

export interface TileWrite {
  level: number;
  index: number;
  /** Every hash the tile holds now (32 bytes each). */
  hashes: Buffer;
}

/**
 * Appends leaf hashes to a tree of `oldSize` leaves: returns every tile that changed, as it is
 * now. `readTile` gives the stored hashes of a partial tile at the tree's right edge.
 */
export async function appendToTiles(
  oldSize: number,
  leafHashes: readonly Buffer[],
  readTile: (level: number, index: number) => Promise<Buffer | undefined>,
): Promise<TileWrite[]> {
  const writes: TileWrite[] = [];
  let incoming: Buffer = Buffer.concat(leafHashes as Buffer[]);
  for (let level = 0; incoming.length > 0; level++) {
    const start = countAtLevel(level, oldSize);
    const firstTile = Math.floor(start / TILE_WIDTH);
    const kept = (start % TILE_WIDTH) * HASH_SIZE;
    let prefix: Buffer = Buffer.alloc(0);
    if (kept > 0) {
      const stored = await readTile(level, firstTile);
      if (!stored || stored.length < kept) throw new Error(`tile ${level}/${firstTile} is missing hashes`);
      prefix = stored.subarray(0, kept);
    }
    const all = Buffer.concat([prefix, incoming]);
    const completed: Buffer[] = [];
    for (let offset = 0; offset < all.length; offset += TILE_WIDTH * HASH_SIZE) {
      const hashes = Buffer.from(all.subarray(offset, offset + TILE_WIDTH * HASH_SIZE));
      writes.push({ level, index: firstTile + offset / (TILE_WIDTH * HASH_SIZE), hashes });
      if (hashes.length === TILE_WIDTH * HASH_SIZE) completed.push(perfectRoot(hashes));
    }
    incoming = Buffer.concat(completed);
  }
  return writes;
}

/** Gives tile `level/index` holding at least `width` hashes (or throws). */
export type TileSource = (level: number, index: number, width: number) => Promise<Buffer>;

const isPowerOfTwo = (n: number) => n > 0 && Number.isInteger(Math.log2(n));

const largestPowerOfTwoBelow = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

/**
 * The tree of one size read from tiles: its head, RFC 6962 inclusion and consistency proofs.
 * Every hash comes from a tile, so a client holding a signed checkpoint needs no proof API.
 */
export class TiledTree {
  private readonly tiles = new Map<string, Promise<Buffer>>();

  constructor(
    readonly size: number,
    private readonly source: TileSource,
  ) {}

  /** MTH(D[0:size]). */
  root(): Promise<Buffer> {
    return this.rangeHash(0, this.size);
  }

  /** Leaf hash `index`. */
  leafHash(index: number): Promise<Buffer> {
    return this.subtree(0, index);
  }

  /** RFC 6962 §2.1.1 PATH(index, D[0:size]). */
  async inclusionProof(index: number): Promise<Buffer[]> {
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.size)
      throw new RangeError('leaf index out of range');
    return this.path(index, 0, this.size);
  }

  /** RFC 6962 §2.1.2 PROOF(oldSize, D[0:size]). */
  async consistencyProof(oldSize: number): Promise<Buffer[]> {
    if (!Number.isSafeInteger(oldSize) || oldSize < 0 || oldSize > this.size) throw new RangeError('size out of range');
    if (oldSize === 0 || oldSize === this.size) return [];
    return this.subproof(oldSize, 0, this.size, true);
  }

  /** MTH of leaves [start, end), a range the RFC 6962 split produces. */
  async rangeHash(start: number, end: number): Promise<Buffer> {
    const n = end - start;
    if (n <= 0) throw new RangeError('empty range');
    if (isPowerOfTwo(n) && start % n === 0) return this.subtree(Math.log2(n), start / n);
    const k = largestPowerOfTwoBelow(n);
    return hashChildren(await this.rangeHash(start, start + k), await this.rangeHash(start + k, end));
  }

  private async path(m: number, start: number, end: number): Promise<Buffer[]> {
    const n = end - start;
    if (n <= 1) return [];
    const k = largestPowerOfTwoBelow(n);
    return m < k
      ? [...(await this.path(m, start, start + k)), await this.rangeHash(start + k, end)]
      : [...(await this.path(m - k, start + k, end)), await this.rangeHash(start, start + k)];
  }

  private async subproof(m: number, start: number, end: number, whole: boolean): Promise<Buffer[]> {
    const n = end - start;
    if (m === n) return whole ? [] : [await this.rangeHash(start, end)];
    const k = largestPowerOfTwoBelow(n);
    return m <= k
      ? [...(await this.subproof(m, start, start + k, whole)), await this.rangeHash(start + k, end)]
      : [...(await this.subproof(m - k, start + k, end, false)), await this.rangeHash(start, start + k)];
  }

  /** The complete subtree of `height` whose leaves are [i·2^height, (i+1)·2^height). */
  private async subtree(height: number, i: number): Promise<Buffer> {
    const level = Math.floor(height / TILE_HEIGHT);
    const span = 2 ** (height % TILE_HEIGHT);
    const first = i * span;
    const tileIndex = Math.floor(first / TILE_WIDTH);
    const tile = await this.tile(level, tileIndex);
    const offset = (first % TILE_WIDTH) * HASH_SIZE;
    return perfectRoot(tile.subarray(offset, offset + span * HASH_SIZE));
  }

  private tile(level: number, index: number): Promise<Buffer> {
    const width = tileWidth(level, index, this.size);
    if (width === 0) return Promise.reject(new RangeError(`tile ${level}/${index} is beyond size ${this.size}`));
    const key = `${level}/${index}`;
    let found = this.tiles.get(key);
    if (!found) {
      found = this.source(level, index, width).then((hashes) => {
        if (hashes.length < width * HASH_SIZE) throw new Error(`tile ${key} holds fewer than ${width} hashes`);
        return hashes;
      });
      this.tiles.set(key, found);
    }
    return found;
  }
}

/**
 * RFC 9162 §2.1.4.2: true when `proof` shows that the tree of `oldSize` with head `oldRoot` is a
 * prefix of the tree of `newSize` with head `newRoot`.
 */
export function verifyConsistencyProof(input: {
  oldSize: number;
  newSize: number;
  oldRoot: Uint8Array;
  newRoot: Uint8Array;
  proof: readonly Uint8Array[];
}): boolean {
  const { oldSize, newSize, proof } = input;
  const oldRoot = Buffer.from(input.oldRoot);
  const newRoot = Buffer.from(input.newRoot);
  if (!Number.isSafeInteger(oldSize) || !Number.isSafeInteger(newSize) || oldSize < 0 || oldSize > newSize)
    return false;
  if (proof.some((p) => p.length !== HASH_SIZE)) return false;
  if (oldSize === newSize) return proof.length === 0 && oldRoot.equals(newRoot);
  if (oldSize === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : [...proof];
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Buffer = Buffer.from(path[0]!);
  let sr: Buffer = Buffer.from(path[0]!);
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = hashChildren(c, fr);
      sr = hashChildren(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = hashChildren(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(oldRoot) && sr.equals(newRoot);
}

/** tlog-tiles entry bundle: each entry as a big-endian uint16 length and its bytes. */
export function formatEntryBundle(entries: readonly Uint8Array[]): Buffer {
  return Buffer.concat(
    entries.flatMap((e) => {
      const length = Buffer.alloc(2);
      length.writeUInt16BE(e.length);
      return [length, Buffer.from(e)];
    }),
  );
}
