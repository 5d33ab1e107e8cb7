import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { StoredClient } from '../storage/interface.js';
import { isFetchRefusal } from '#lib/fetch/guarded-fetch.js';
import { oauthError } from '#lib/oauth/errors.js';
import type { ClientMetadata } from '#lib/oauth/client-metadata.js';
import type { ControlPlaneServices } from '../context.js';

/** Key sets kept at most this long before they are fetched again. */
const MAX_AGE_MS = 600_000;
/** A key set is not fetched again sooner than this, even for an unknown `kid`. */
const COOLDOWN_MS = 30_000;
/** Remote key sets kept at once; the least recently used goes first. */
const MAX_ENTRIES = 500;
/** A key set document larger than this is refused. */
const MAX_BYTES = 65_536;
const TIMEOUT_MS = 3000;

interface Entry {
  keys: JWTVerifyGetKey;
  fetchedAt: number;
}

/**
 * The key sets of `private_key_jwt` clients that registered a `jwks_uri`, fetched through the
 * guarded fetcher (docs/fetch.md) and kept in a bounded cache: at most {@link MAX_ENTRIES}
 * entries, least recently used evicted, each at most {@link MAX_AGE_MS} old.
 */
export class RemoteKeySets {
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<Entry>>();

  constructor(
    private readonly services: Pick<ControlPlaneServices, 'fetcher' | 'now'>,
    private readonly limit = MAX_ENTRIES,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  /**
   * The keys at `uri`. With `refresh`, a set fetched before the cooldown is fetched again
   * (the client may have rotated to a key the cached set lacks).
   */
  async get(uri: string, refresh = false): Promise<JWTVerifyGetKey> {
    const now = this.services.now();
    const entry = this.#entries.get(uri);
    if (entry && now - entry.fetchedAt < MAX_AGE_MS && !(refresh && now - entry.fetchedAt >= COOLDOWN_MS)) {
      // Map order is insertion order: re-inserting marks the entry most recently used.
      this.#entries.delete(uri);
      this.#entries.set(uri, entry);
      return entry.keys;
    }
    let pending = this.#pending.get(uri);
    if (!pending) {
      pending = this.#fetch(uri).finally(() => this.#pending.delete(uri));
      this.#pending.set(uri, pending);
    }
    return (await pending).keys;
  }

  async #fetch(uri: string): Promise<Entry> {
    const fetched = await this.services.fetcher.fetch(uri, {
      maxBytes: MAX_BYTES,
      timeoutMs: TIMEOUT_MS,
      accept: 'application/jwk-set+json, application/json',
    });
    if (fetched.status !== 200) throw new Error(`the key set answered ${fetched.status}`);
    const keys = createLocalJWKSet(JSON.parse(fetched.body.toString('utf8')) as JSONWebKeySet);
    const entry = { keys, fetchedAt: this.services.now() };
    this.#entries.delete(uri);
    if (this.#entries.size >= this.limit) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(uri, entry);
    return entry;
  }
}

const remoteSets = new WeakMap<object, RemoteKeySets>();

/**
 * The client's registered keys (its `jwks`, or its `jwks_uri` fetched through the guarded fetcher
 * and cached per services), or null when it registered none. They verify what the client signs:
 * `private_key_jwt` assertions and request objects. A `jwks_uri` that cannot be fetched throws.
 */
export async function clientKeySet(
  services: Pick<ControlPlaneServices, 'fetcher' | 'now'>,
  client: StoredClient,
  refresh = false,
): Promise<JWTVerifyGetKey | null> {
  if (client.metadata.jwks) return createLocalJWKSet(client.metadata.jwks);
  const uri = client.metadata.jwks_uri;
  if (!uri) return null;
  let sets = remoteSets.get(services);
  if (!sets) {
    sets = new RemoteKeySets(services);
    remoteSets.set(services, sets);
  }
  return sets.get(uri, refresh);
}

/**
 * Every URL of the registration the server itself sends requests to (`jwks_uri`,
 * `backchannel_logout_uri`, `request_uris`) must be one the guarded fetcher would fetch: https,
 * and every address of its host public (unless `fetch.allowPrivateTargets`). Checked at
 * registration and update, so a URL that points inside the network is refused before anything is
 * ever sent to it.
 */
export async function checkFetchedUris(
  services: Pick<ControlPlaneServices, 'fetcher'>,
  metadata: ClientMetadata,
): Promise<void> {
  const targets: Array<[string, string]> = [
    ...(metadata.jwks_uri !== undefined ? [['jwks_uri', metadata.jwks_uri] as [string, string]] : []),
    ...(metadata.backchannel_logout_uri !== undefined
      ? [['backchannel_logout_uri', metadata.backchannel_logout_uri] as [string, string]]
      : []),
    ...(metadata.request_uris ?? []).map((uri): [string, string] => ['request_uris', uri]),
  ];
  for (const [member, uri] of targets) {
    try {
      await services.fetcher.check(uri);
    } catch (error) {
      if (!isFetchRefusal(error)) throw error;
      throw oauthError('invalid_client_metadata', `${member} is refused: ${error.message}`);
    }
  }
}
