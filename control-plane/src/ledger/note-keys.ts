import { generateKeyPairSync } from 'node:crypto';
import {
  formatVerifierKey,
  NOTE_SIGNATURE_COSIGNATURE_V1,
  NOTE_SIGNATURE_ED25519,
  noteKeyId,
  noteSignerFromPkcs8,
  rawEd25519PublicKey,
  type NoteSigner,
} from '#lib/ledger/transparency/signed-note.js';
import type { SecretsService } from '../keys/secrets.js';
import type { NoteKeyPurpose, Storage, StoredNoteKey } from '../storage/interface.js';

/** The log's origin line and note key name: `<issuer host>/keyplane/ledger`. */
export const logOrigin = (issuer: string) => `${new URL(issuer).host}/keyplane/ledger`;
/** This instance's name as a witness of other logs. */
export const witnessName = (issuer: string) => `${new URL(issuer).host}/keyplane/witness`;

const SIGNATURE_TYPE: Record<NoteKeyPurpose, number> = {
  log: NOTE_SIGNATURE_ED25519,
  witness: NOTE_SIGNATURE_COSIGNATURE_V1,
};

/** A key with its verifier key text (C2SP vkey). */
export interface LoadedNoteKey {
  signer: NoteSigner;
  vkey: string;
  createdAt: number;
  retiresAt: number | null;
}

/**
 * The Ed25519 note keys, apart from the ES256 JWT keys: the log key signs checkpoints, the witness
 * key cosigns other logs'. A rotation adds a new log key and lets the old one go on signing for an
 * overlap, so a witness that pinned the old key keeps cosigning while it learns the new one.
 */
export class NoteKeyRing {
  private loaded: Record<NoteKeyPurpose, LoadedNoteKey[]> = { log: [], witness: [] };

  constructor(
    private readonly storage: Storage,
    private readonly secrets: SecretsService,
    private readonly issuer: string,
    private readonly now: () => number,
  ) {}

  /** Creates the first log and witness keys of a fresh store, then loads the ring. */
  async ensure(): Promise<void> {
    for (const purpose of ['log', 'witness'] as const) {
      await this.storage.transaction(async (tx) => {
        await tx.receipts.lockSealing();
        if ((await tx.tlog.noteKeys(purpose)).length === 0) await tx.tlog.insertNoteKey(this.generate(purpose));
      });
    }
    await this.reload();
  }

  async reload(): Promise<void> {
    for (const purpose of ['log', 'witness'] as const) {
      this.loaded[purpose] = (await this.storage.tlog.noteKeys(purpose)).map((k) => this.open(k));
    }
  }

  /**
   * Adds a new log key that signs from now on beside the old ones, which stop after `overlapMs`.
   * Returns the new key's vkey.
   */
  async rotateLogKey(overlapMs: number): Promise<string> {
    // The new key keeps the old one's name: a note's signature lines differ only by key ID.
    const fresh = this.generate('log', this.loaded.log.at(-1)?.signer.name);
    await this.storage.transaction(async (tx) => {
      await tx.receipts.lockSealing();
      await tx.tlog.insertNoteKey(fresh);
      await tx.tlog.retireNoteKeys('log', fresh.keyId, this.now() + overlapMs);
    });
    await this.reload();
    return formatVerifierKey(fresh.name, NOTE_SIGNATURE_ED25519, fresh.publicKey);
  }

  /** The log keys that sign now: the newest, and any rotated one still in its overlap; oldest first. */
  logSigners(): NoteSigner[] {
    const now = this.now();
    return this.loaded.log.filter((k) => k.retiresAt === null || k.retiresAt > now).map((k) => k.signer);
  }

  /** The vkeys of the log keys that sign now, newest first. */
  logVerifierKeys(): string[] {
    const now = this.now();
    return this.loaded.log
      .filter((k) => k.retiresAt === null || k.retiresAt > now)
      .map((k) => k.vkey)
      .reverse();
  }

  witness(): LoadedNoteKey {
    const newest = this.loaded.witness.at(-1);
    if (!newest) throw new Error('the note key ring is not loaded');
    return newest;
  }

  private generate(purpose: NoteKeyPurpose, keepName?: string): StoredNoteKey {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const name = keepName ?? (purpose === 'log' ? logOrigin(this.issuer) : witnessName(this.issuer));
    const raw = rawEd25519PublicKey(publicKey);
    const keyId = noteKeyId(name, SIGNATURE_TYPE[purpose], raw).toString('hex');
    return {
      keyId,
      purpose,
      name,
      publicKey: raw,
      sealedPrivateKey: this.secrets.seal(`note-key:${keyId}`, privateKey.export({ format: 'der', type: 'pkcs8' })),
      createdAt: this.now(),
      retiresAt: null,
    };
  }

  private open(stored: StoredNoteKey): LoadedNoteKey {
    const signer = noteSignerFromPkcs8(
      stored.name,
      this.secrets.open(`note-key:${stored.keyId}`, stored.sealedPrivateKey),
    );
    return {
      signer,
      vkey: formatVerifierKey(stored.name, SIGNATURE_TYPE[stored.purpose], stored.publicKey),
      createdAt: stored.createdAt,
      retiresAt: stored.retiresAt,
    };
  }
}
