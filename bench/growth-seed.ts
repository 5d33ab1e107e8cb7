/**
 * Bulk seeding for bench:growth (docs/performance.md#growth-npm-run-benchgrowth): accounts with a
 * passkey each, confidential clients and receipts, written straight through the control plane's
 * storage interface in large transactions (no HTTP, no ceremonies), so that a store of a million
 * accounts and ten million receipts takes minutes rather than days.
 *
 * What is written is what the server writes, in its formats:
 * - an account is an identity (`usr_growth_…`, username `growth…`) and one passkey credential (a
 *   random credential id, an ES256 COSE public key from a pool of 64 real P-256 keys: each key's
 *   bytes are those of a real passkey, and key generation is kept out of the seeding time);
 * - a client is a confidential client registration, owned by an account for half of them;
 * - a receipt is made from a domain event by the ledger's own `receiptFromEvent` (kind, time,
 *   random nonce, actor, ids) and appended with `tx.receipts.append`: each account's first receipt
 *   is its `account.created`, the others `session.started` sign-ins, spread over the past year;
 *   the receipts are sealed by the ledger itself, an epoch of `ledger.sealMaxReceipts` at a time
 *   (`Ledger.importSealed`: the sealer's tree, signed and chained checkpoint, audit paths and C2SP
 *   transparency log entry, each receipt written once, already placed), so that
 *   `keyplane ledger audit` passes on the result and the control plane starts on it at once.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { canonicalReceipt, type Receipt } from '#lib/ledger/receipt.js';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices } from '../control-plane/src/context.js';
import type { DomainEvent } from '../control-plane/src/events/types.js';
import { receiptFromEvent } from '../control-plane/src/ledger/receipt-from-event.js';
import type { StoredClient } from '../control-plane/src/storage/interface.js';

export interface GrowthSize {
  accounts: number;
  receipts: number;
  clients: number;
}

export interface Seeded {
  /** A sample of the seeded receipts' hashes (up to 1,000, spread over the whole ledger). */
  receiptHashes: string[];
  /** Seconds per kind of row, and in all. */
  seconds: { accounts: number; clients: number; receipts: number; total: number };
}

/** Rows per transaction: large enough that commits cost little, small enough to keep memory flat. */
const BATCH = 20_000;
const KEY_POOL = 64;
const YEAR_MS = 365 * 86_400_000;

const pad = (n: number) => String(n).padStart(8, '0');

/** The identity id and username of seeded account `i`. */
export const seededAccount = (i: number) => ({ identityId: `usr_growth_${pad(i)}`, username: `growth${pad(i)}` });

/** An ES256 public key as COSE_Key bytes (RFC 9053 §7.1.1: kty EC2, alg -7, crv P-256, x, y). */
function coseP256(): Uint8Array {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const x = Buffer.from(jwk.x!, 'base64url');
  const y = Buffer.from(jwk.y!, 'base64url');
  return Buffer.concat([
    Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]),
    x,
    Buffer.from([0x22, 0x58, 0x20]),
    y,
  ]);
}

type Seedable = Pick<ControlPlaneServices, 'storage' | 'ledger' | 'config'>;

/** Random bytes drawn from one large buffer: a call to the CSPRNG per receipt field costs more than the receipt. */
class RandomPool {
  private pool = randomBytes(1 << 20);
  private at = 0;
  private take(n: number): Buffer {
    if (this.at + n > this.pool.length) {
      this.pool = randomBytes(1 << 20);
      this.at = 0;
    }
    return this.pool.subarray(this.at, (this.at += n));
  }
  hex(n: number): string {
    return this.take(n).toString('hex');
  }
  id(): string {
    return this.take(12).toString('base64url');
  }
}

/** Runs `write(i)` for i in [0, n) in transactions of BATCH rows, reporting progress now and then. */
async function inBatches(
  { storage }: Seedable,
  n: number,
  write: (tx: Parameters<Parameters<Seedable['storage']['transaction']>[0]>[0], i: number) => Promise<void>,
  after?: (done: number) => Promise<void>,
): Promise<void> {
  for (let start = 0; start < n; start += BATCH) {
    const end = Math.min(n, start + BATCH);
    await storage.transaction(async (tx) => {
      for (let i = start; i < end; i++) await write(tx, i);
    });
    await after?.(end);
  }
}

/**
 * Seeds `size` into the store of `services` (which may already hold data: seeded names never
 * collide with real ones, but seeding the same store twice fails on the second run's first
 * username). `progress` gets a line now and then.
 */
export async function seedGrowth(
  services: Seedable,
  size: GrowthSize,
  progress: (line: string) => void = () => undefined,
  now = Date.now(),
): Promise<Seeded> {
  const t0 = performance.now();
  const elapsed = (from: number) => (performance.now() - from) / 1000;
  const since = now - YEAR_MS;
  const keys = Array.from({ length: KEY_POOL }, coseP256);
  const credIds: string[] = new Array<string>(size.accounts);

  let t = performance.now();
  await inBatches(
    services,
    size.accounts,
    async (tx, i) => {
      const { identityId, username } = seededAccount(i);
      const at = since + Math.floor((i / Math.max(1, size.accounts)) * (YEAR_MS / 2));
      if (
        !(await tx.identities.create({
          identityId,
          username,
          displayName: '',
          preferences: {},
          founder: false,
          createdAt: at,
          updatedAt: at,
        }))
      )
        throw new Error(`username ${username} is taken: this store was seeded before`);
      const credId = randomBytes(16).toString('base64url');
      credIds[i] = credId;
      await tx.credentials.insert({
        credId,
        identityId,
        publicKey: keys[i % KEY_POOL]!,
        counter: 0,
        transports: ['internal', 'hybrid'],
        backupEligible: true,
        backedUp: true,
        label: 'Passkey',
        createdAt: at,
        lastUsedAt: null,
        aaguid: null,
      });
    },
    async (done) => progress(`  accounts: ${done}/${size.accounts} (${elapsed(t).toFixed(1)} s)`),
  );
  const accountsSeconds = elapsed(t);

  t = performance.now();
  const metadata = validateClientMetadata({ redirect_uris: ['https://rp.example/cb'], client_name: 'Growth app' });
  await inBatches(services, size.clients, async (tx, i) => {
    const client: StoredClient = {
      clientId: `cl_growth_${pad(i)}`,
      type: 'confidential',
      metadata,
      secretHash: sha256Hex(`secret-${i}`),
      secretIssuedAt: since,
      ownerId: i % 2 || size.accounts === 0 ? null : seededAccount(i % size.accounts).identityId,
      registrationTokenHash: sha256Hex(`registration-${i}`),
      revision: 1,
      createdAt: since + i,
      updatedAt: since + i,
    };
    await tx.clients.insert(client);
  });
  const clientsSeconds = elapsed(t);
  if (size.clients > 0) progress(`  clients: ${size.clients} (${clientsSeconds.toFixed(1)} s)`);

  t = performance.now();
  const sampleEvery = Math.max(1, Math.floor(size.receipts / 1000));
  const receiptHashes: string[] = [];
  const epochSize = services.config.ledger.sealMaxReceipts;
  const random = new RandomPool();
  let epoch: Array<{ receipt: Receipt; hash: string; body: string; createdAt: number }> = [];
  let lastReport = performance.now();
  for (let i = 0; i < size.receipts; i++) {
    // Receipt i belongs to account i mod accounts: its first one is the account's creation.
    const account = size.accounts > 0 ? i % size.accounts : -1;
    const at = since + Math.floor((i / Math.max(1, size.receipts)) * YEAR_MS);
    const event: DomainEvent =
      account < 0
        ? { type: 'keys.rotated', at, outcome: 'success', kid: `kid_${i}`, retired: null }
        : i < size.accounts
          ? {
              type: 'account.created',
              at,
              outcome: 'success',
              identityId: seededAccount(account).identityId,
              founder: false,
              credId: credIds[account]!,
            }
          : {
              type: 'session.started',
              at,
              outcome: 'success',
              identityId: seededAccount(account).identityId,
              sessionId: `ses_${random.id()}`,
              deviceId: `dev_${random.id()}`,
              method: 'passkey',
              assurance: 'passkey',
            };
    const receipt = receiptFromEvent(event, random.hex(16));
    const { body, hash } = canonicalReceipt(receipt);
    epoch.push({ receipt, hash, body, createdAt: at });
    if (i % sampleEvery === 0) receiptHashes.push(hash);
    if (epoch.length === epochSize || i === size.receipts - 1) {
      // Sealed as the ledger seals: one epoch of `ledger.sealMaxReceipts`, each receipt written once.
      await services.ledger.importSealed(epoch);
      epoch = [];
      if (performance.now() - lastReport > 5000 || i === size.receipts - 1) {
        lastReport = performance.now();
        progress(`  receipts: ${i + 1}/${size.receipts} sealed (${elapsed(t).toFixed(1)} s)`);
      }
    }
  }
  const receiptsSeconds = elapsed(t);
  return {
    receiptHashes,
    seconds: { accounts: accountsSeconds, clients: clientsSeconds, receipts: receiptsSeconds, total: elapsed(t0) },
  };
}
