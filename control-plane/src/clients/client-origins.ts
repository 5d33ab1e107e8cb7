import { originsOf } from '#lib/oauth/redirect-uri.js';
import type { ClientStore } from '../storage/interface.js';

/**
 * How long origins read here stand before they are read again: the longest a client change made
 * through another replica takes to reach this one's CORS answers. A change made here is seen at
 * once, except on PostgreSQL by a read that overlaps the change's commit (docs/oidc.md §9.1).
 */
export const CLIENT_ORIGINS_MAX_AGE_MS = 5_000;

/** A value read on demand and kept until `forget()` or for `maxAgeMs`; a failed read is not kept. */
class Kept<T> {
  #value: Promise<T> | null = null;
  #readAt = 0;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly maxAgeMs: number,
    private readonly clock: () => number,
  ) {}

  get(): Promise<T> {
    const now = this.clock();
    if (this.#value && now - this.#readAt < this.maxAgeMs) return this.#value;
    this.#readAt = now;
    const value = this.read();
    this.#value = value;
    value.catch(() => {
      if (this.#value === value) this.#value = null;
    });
    return value;
  }

  forget(): void {
    this.#value = null;
  }
}

/**
 * The origins of registered redirect URIs (and the published in-place ones), for the CORS answers
 * of the OIDC endpoints and the in-place sign-in ones, which every browser request asks for:
 * reading every client's metadata each time grows with the number of clients. Read once, then
 * kept until a client or an org changes here (the control plane calls `forget` on every
 * `client.*` and `org.*` event) or for `maxAgeMs` at most. The age
 * is measured on the monotonic clock, not the control plane's (which tests stop).
 */
export class ClientOrigins {
  readonly #all: Kept<ReadonlySet<string>>;
  readonly #inPlace: Kept<readonly string[]>;

  /** `publishedInPlace` reads the published in-place origins (clients/in-place-origins.ts). */
  constructor(
    clients: Pick<ClientStore, 'allRedirectUris'>,
    publishedInPlace: () => Promise<readonly string[]>,
    maxAgeMs = CLIENT_ORIGINS_MAX_AGE_MS,
    clock: () => number = () => performance.now(),
  ) {
    this.#all = new Kept(async () => new Set(originsOf(await clients.allRedirectUris())), maxAgeMs, clock);
    this.#inPlace = new Kept(publishedInPlace, maxAgeMs, clock);
  }

  /** Whether `origin` is the origin of some client's redirect URI (browser-based clients' CORS). */
  async registered(origin: string): Promise<boolean> {
    return (await this.#all.get()).has(origin);
  }

  /** The origins of clients that turned in-place sign-in on (docs/in-place.md#one-origin-rule-one-cors-rule). */
  inPlace(): Promise<readonly string[]> {
    return this.#inPlace.get();
  }

  /** A client changed: the next question reads them again. */
  forget(): void {
    this.#all.forget();
    this.#inPlace.forget();
  }
}
