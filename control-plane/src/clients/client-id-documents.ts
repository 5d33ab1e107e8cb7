import { isFetchRefusal } from '#lib/fetch/guarded-fetch.js';
import {
  DOCUMENT_MAX_BYTES,
  DOCUMENT_TIMEOUT_MS,
  checkClientIdUrl,
  documentLifetime,
  documentRefusal,
  isClientIdUrl,
  readClientIdMetadataDocument,
} from '#lib/oauth/client-id-metadata.js';
import { clientTypeOf } from '#lib/oauth/client-metadata.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';
import { findClient } from './find-client.js';

/** Documents kept at once; the least recently used goes first. */
const MAX_ENTRIES = 500;

type DocumentServices = Pick<ControlPlaneServices, 'storage' | 'fetcher' | 'now' | 'config'>;

interface Entry {
  client: StoredClient;
  expiresAt: number;
}

/**
 * Client ID Metadata Documents (docs/oidc.md#21-client-id-metadata-documents): fetched through the
 * guarded fetcher, kept for as long as their HTTP caching headers say within the bounds of
 * lib/oauth/client-id-metadata.ts, fetched again once expired. A refused document is never kept,
 * so the next request fetches again (after the client fixed it, it works at once).
 */
export class ClientIdDocuments {
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<StoredClient>>();

  constructor(
    private readonly services: DocumentServices,
    private readonly limit = MAX_ENTRIES,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The client the document at `url` describes; throws `invalid_client` naming the problem. */
  async get(url: string): Promise<StoredClient> {
    const entry = this.#entries.get(url);
    if (entry && this.services.now() < entry.expiresAt) {
      // Map order is insertion order: re-inserting marks the entry most recently used.
      this.#entries.delete(url);
      this.#entries.set(url, entry);
      return entry.client;
    }
    this.#entries.delete(url);
    let pending = this.#pending.get(url);
    if (!pending) {
      pending = this.#fetch(url).finally(() => this.#pending.delete(url));
      this.#pending.set(url, pending);
    }
    return pending;
  }

  async #fetch(url: string): Promise<StoredClient> {
    const problem = checkClientIdUrl(url);
    if (problem) throw documentRefusal(problem.problem, problem.detail);
    let fetched;
    try {
      // Draft §4: the document is served at the URL itself, so a redirect is not followed.
      fetched = await this.services.fetcher.fetch(url, {
        maxBytes: DOCUMENT_MAX_BYTES,
        timeoutMs: DOCUMENT_TIMEOUT_MS,
        accept: 'application/json',
        followRedirects: false,
      });
    } catch (error) {
      if (!isFetchRefusal(error)) throw error;
      if (error.reason === 'fetch_too_large')
        throw documentRefusal('too_large', `the document is larger than ${DOCUMENT_MAX_BYTES} bytes`);
      if (error.reason === 'fetch_timeout' || error.reason === 'fetch_failed')
        throw documentRefusal('fetch_failed', error.message);
      throw documentRefusal('fetch_refused', error.message);
    }
    if (fetched.status !== 200) throw documentRefusal('fetch_failed', `the document URL answered ${fetched.status}`);
    const type = String(fetched.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (type !== 'application/json' && !type.endsWith('+json'))
      throw documentRefusal('not_json', 'the document is not served as application/json');
    const metadata = readClientIdMetadataDocument(url, fetched.body.toString('utf8'), {
      defaultScopes: this.services.config.oidc.defaultClientScopes,
    });
    const now = this.services.now();
    const client: StoredClient = {
      clientId: url,
      type: clientTypeOf(metadata.token_endpoint_auth_method),
      metadata,
      secretHash: null,
      secretIssuedAt: null,
      ownerId: null,
      registrationTokenHash: '',
      revision: 0,
      createdAt: now,
      updatedAt: now,
    };
    this.#entries.delete(url);
    if (this.#entries.size >= this.limit) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(url, { client, expiresAt: now + documentLifetime(fetched.headers) });
    return client;
  }
}

const documents = new WeakMap<object, ClientIdDocuments>();

/** The document cache of these services (one per running control plane). */
export function clientIdDocuments(services: DocumentServices): ClientIdDocuments {
  let cache = documents.get(services);
  if (!cache) {
    cache = new ClientIdDocuments(services);
    documents.set(services, cache);
  }
  return cache;
}

/**
 * The client a request names: a registered one, or for an http(s) URL its Client ID Metadata
 * Document (refused with `invalid_client` when it cannot be used). Null when no client is registered under
 * a plain id.
 */
export async function resolveClient(services: DocumentServices, clientId: string): Promise<StoredClient | null> {
  if (isClientIdUrl(clientId)) return clientIdDocuments(services).get(clientId);
  return findClient(services, clientId);
}

/** Whether the client came from a Client ID Metadata Document (its id is the document's URL). */
export function isDocumentClient(client: Pick<StoredClient, 'clientId'>): boolean {
  return isClientIdUrl(client.clientId);
}

/** The host that serves the client's document: what the consent page names, marked unverified. */
export function documentHostOf(client: Pick<StoredClient, 'clientId'>): string | null {
  if (!isDocumentClient(client)) return null;
  try {
    return new URL(client.clientId).host;
  } catch {
    return null;
  }
}
