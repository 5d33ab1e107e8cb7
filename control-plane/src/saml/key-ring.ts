import { createHash, X509Certificate } from 'node:crypto';
import type { SamlSigningKey } from '#lib/saml/sign.js';
import { planRotation, publishedKeys, type RotationPolicy } from '#lib/keys/rotation.js';
import type { ControlPlaneServices } from '../context.js';
import { rotationPolicy } from '../keys/key-ring.js';
import type { StoredSamlKey } from '../storage/interface.js';

export type SamlKeyServices = Pick<ControlPlaneServices, 'storage' | 'secrets' | 'now' | 'config'>;

/** How long an issued assertion may be used (s); a retired key stays in the metadata at least this long. */
export const ASSERTION_VALIDITY_SECONDS = 300;
/** Reloaded from storage at most this often, so a rotation by another replica takes effect. */
const RELOAD_MS = 10_000;

/**
 * The IdP's RSA-3072 key ring, kept like the ES256 ring (lib/keys/rotation.ts): a `current` key
 * signs, a `next` key is already in the metadata so SPs that refresh it know the certificate
 * before it signs, retired keys stay listed for their retention. Private keys are sealed with
 * the master key at rest and opened only into memory. Generated on first use, not at start:
 * RSA-3072 generation is slow and most installations never use SAML.
 */
export class SamlKeyRing {
  private loaded: StoredSamlKey[] = [];
  private signing: (SamlSigningKey & { kid: string }) | null = null;
  private loadedAt = -Infinity;
  private pending: Promise<void> | null = null;
  private readonly policy: RotationPolicy;

  constructor(private readonly services: SamlKeyServices) {
    this.policy = rotationPolicy(services.config.keys, ASSERTION_VALIDITY_SECONDS * 1000);
  }

  /** The current signing key, creating the ring or following its schedule when due. */
  async current(): Promise<SamlSigningKey & { kid: string }> {
    await this.fresh();
    return this.signing!;
  }

  /** Certificates for the metadata: current first, then next and retired ones still in use. */
  async certificates(): Promise<string[]> {
    await this.fresh();
    const published = publishedKeys(this.loaded, this.services.now(), this.policy);
    const rank = (k: StoredSamlKey) => (k.state === 'current' ? 0 : k.state === 'next' ? 1 : 2);
    return published.sort((a, b) => rank(a) - rank(b) || b.createdAt - a.createdAt).map((k) => k.certificatePem);
  }

  /** Rotates now: next signs, current retires (still listed), a new next is created. */
  async rotate(): Promise<{ retired: string | null; current: string }> {
    const before = (await this.current()).kid;
    await this.apply(true);
    return { retired: before, current: this.signing!.kid };
  }

  private async fresh(): Promise<void> {
    if (this.signing && this.services.now() - this.loadedAt < RELOAD_MS) return;
    this.pending ??= this.apply(false).finally(() => {
      this.pending = null;
    });
    await this.pending;
  }

  private async apply(force: boolean): Promise<void> {
    const { storage } = this.services;
    const now = this.services.now();
    const keys = await storage.saml.keys();
    const actions = planRotation(keys, now, this.policy, force);
    if (actions.length > 0) {
      // Generated outside the transaction (slow); under the ring lock, a replica that acted first wins and ours are dropped.
      const created = new Map<string, StoredSamlKey>();
      for (const action of actions)
        if (action.type === 'create') created.set(action.state, await this.generate(action.state, now));
      const shape = (list: StoredSamlKey[]) => list.map((k) => `${k.kid}:${k.state}`).join(',');
      await storage.transaction(async (tx) => {
        // Another replica may have acted since we read the ring: then its keys stand and ours are dropped.
        await tx.saml.lockRing();
        if (shape(await tx.saml.keys()) !== shape(keys)) return;
        for (const action of actions) {
          if (action.type === 'create') await tx.saml.insertKey(created.get(action.state)!);
          else if (action.type === 'promote') await tx.saml.setKeyState(action.kid, 'current', now);
          else if (action.type === 'retire') await tx.saml.setKeyState(action.kid, 'retired', now);
          else await tx.saml.removeKey(action.kid);
        }
      });
    }
    this.loaded = await storage.saml.keys();
    const current = this.loaded
      .filter((k) => k.state === 'current')
      .sort((a, b) => (b.activatedAt ?? 0) - (a.activatedAt ?? 0))[0];
    if (!current) throw new Error('the SAML key ring has no current key');
    if (this.signing?.kid !== current.kid) {
      const privateKeyPem = this.services.secrets
        .open(`saml-key:${current.kid}`, current.sealedPrivateKey)
        .toString('utf8');
      this.signing = { kid: current.kid, privateKeyPem, certificatePem: current.certificatePem };
    }
    this.loadedAt = this.services.now();
  }

  private async generate(state: 'current' | 'next', now: number): Promise<StoredSamlKey> {
    const { keys } = this.services.config;
    // Valid through a full period as next, one as current and the retention after, with a margin.
    const validDays = Math.max(365, 2 * (keys.rotateEveryDays || 365) + keys.retainRetiredDays + 30);
    // Loaded when a key is made: @peculiar/x509 costs about 0.15 s of CPU to load, which every
    // process that built the app paid (docs/platform.md#test-tiers).
    const { generateSamlKey } = await import('#lib/saml/certificate.js');
    const generated = await generateSamlKey({
      commonName: `Keyplane SAML IdP ${new URL(this.services.config.issuer).host}`,
      now,
      validDays,
    });
    const kid = createHash('sha256')
      .update(new X509Certificate(generated.certificatePem).raw)
      .digest('base64url')
      .slice(0, 22);
    return {
      kid,
      state,
      certificatePem: generated.certificatePem,
      sealedPrivateKey: this.services.secrets.seal(`saml-key:${kid}`, generated.privateKeyPem),
      createdAt: now,
      activatedAt: state === 'current' ? now : null,
      retiredAt: null,
      notAfter: generated.notAfter,
    };
  }
}

const rings = new WeakMap<object, SamlKeyRing>();

/** The one ring of a running control plane (one per storage, so every route shares it). */
export function samlKeyRing(services: SamlKeyServices): SamlKeyRing {
  let ring = rings.get(services.storage);
  if (!ring) rings.set(services.storage, (ring = new SamlKeyRing(services)));
  return ring;
}
