import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { ControlPlaneConfig } from '#config/types.js';
import type { GuardedFetcher } from '#lib/fetch/guarded-fetch.js';
import type { MetadataEntry, VerifiedMetadata } from '#lib/webauthn/verify-metadata-blob.js';

/** A BLOB is a few megabytes (about 300 FIDO2 entries with icons); the fetch allows four times today's. */
const BLOB_MAX_BYTES = 32 * 1024 * 1024;
const BLOB_FETCH_TIMEOUT_MS = 30_000;

/** The attestation formats whose certificate chain SimpleWebAuthn checks against the BLOB's statement. */
export const METADATA_CHECKED_FORMATS: readonly string[] = ['packed', 'tpm', 'android-key', 'android-safetynet'];

export type MetadataSettings = ControlPlaneConfig['passkeys']['mds'];

/**
 * The FIDO Metadata Service BLOB this control plane verifies attestation statements against
 * (docs/passkeys.md#metadata): loaded from a file or through the guarded fetcher, its signature
 * chain checked on every load, handed to SimpleWebAuthn's MetadataService, and loaded again every
 * `refreshHours`. A load that fails or is not newer keeps the BLOB in use.
 */
export class AuthenticatorMetadata {
  private current: VerifiedMetadata | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly settings: MetadataSettings,
    private readonly fetcher: GuardedFetcher,
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** Whether a BLOB source is configured at all. */
  get configured(): boolean {
    return this.settings.url !== undefined || this.settings.file !== undefined;
  }

  /** The loaded BLOB's serial number and next update, or null before the first good load. */
  get loaded(): { no: number; nextUpdate: string; entries: number } | null {
    const c = this.current;
    return c ? { no: c.no, nextUpdate: c.nextUpdate, entries: c.entries.size } : null;
  }

  /** What the loaded BLOB says of an AAGUID; null when it lists it not (or nothing is loaded). */
  entry(aaguid: string | null | undefined): MetadataEntry | null {
    return (aaguid && this.current?.entries.get(aaguid.toLowerCase())) || null;
  }

  /** Loads the BLOB now: read or fetch, verify its chain and signature, install it if newer. */
  async refresh(): Promise<{ no: number; entries: number }> {
    const [{ verifyMetadataBlob, FIDO_MDS_ROOTS }, { MetadataService }] = await Promise.all([
      import('#lib/webauthn/verify-metadata-blob.js'),
      import('@simplewebauthn/server'),
    ]);
    const blob = await this.read();
    const roots = this.settings.rootCertificateFile
      ? [await readFile(resolve(this.settings.rootCertificateFile), 'utf8')]
      : FIDO_MDS_ROOTS;
    const verified = await verifyMetadataBlob(blob, roots);
    // FIDO MDS 3.0 §3.1.8: ignore a BLOB whose number is not greater than the one held.
    if (this.current && verified.no <= this.current.no)
      return { no: this.current.no, entries: this.current.entries.size };
    // Permissive: an AAGUID the BLOB lists not is no failure of the ceremony; the policy judges it unattested.
    await MetadataService.initialize({
      mdsServers: [],
      statements: verified.statements,
      verificationMode: 'permissive',
    });
    this.current = verified;
    return { no: verified.no, entries: verified.entries.size };
  }

  /** Loads now and then every `refreshHours`; failures are logged and the previous BLOB stays. */
  async start(): Promise<void> {
    if (!this.configured || this.timer) return;
    const load = () =>
      this.refresh().catch((error: unknown) => this.warn(`FIDO metadata not loaded: ${(error as Error).message}`));
    this.timer = setInterval(() => void load(), this.settings.refreshHours * 3_600_000);
    this.timer.unref();
    await load();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async read(): Promise<string> {
    if (this.settings.file) return readFile(resolve(this.settings.file), 'utf8');
    if (!this.settings.url) throw new Error('no FIDO metadata source is configured (passkeys.mds.url or .file)');
    const res = await this.fetcher.fetch(this.settings.url, {
      maxBytes: BLOB_MAX_BYTES,
      timeoutMs: BLOB_FETCH_TIMEOUT_MS,
      accept: 'application/jwt, text/plain;q=0.9, */*;q=0.5',
    });
    if (res.status !== 200) throw new Error(`the metadata URL answered ${res.status}`);
    return res.body.toString('utf8');
  }
}
