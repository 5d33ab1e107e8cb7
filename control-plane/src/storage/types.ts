import type { JWK } from 'jose';

/**
 * Storage is one small interface per resource. Methods are async so that a PostgreSQL backend
 * is an addition; the SQLite backend answers from prepared statements.
 */

export type KeyState = 'next' | 'current' | 'retired';

export interface StoredSigningKey {
  kid: string;
  alg: 'ES256';
  state: KeyState;
  publicJwk: JWK;
  /** The private JWK as JSON, sealed with the master key (AES-256-GCM, bound to the kid). */
  sealedPrivateJwk: Buffer;
  createdAt: number;
  activatedAt: number | null;
  retiredAt: number | null;
}

export interface KeyStore {
  list(): Promise<StoredSigningKey[]>;
  insert(key: StoredSigningKey): Promise<void>;
  /** Moves keys between states; only the listed kids change. */
  setState(kid: string, state: KeyState, at: number): Promise<void>;
  remove(kid: string): Promise<void>;
}

export interface Stores {
  keys: KeyStore;
}

export interface Storage extends Stores {
  /** Runs `work` in one transaction: everything it writes lands together or not at all. */
  transaction<T>(work: (tx: Stores) => Promise<T>): Promise<T>;
  /** Cheap liveness check for /readyz. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
