import type { ApiScope } from '#lib/apis/api-declaration.js';
import type { RecordStore } from './accounts.js';

// ---- APIs and their scopes (docs/apis.md) ----

export interface StoredApi {
  /** `api_` and 128 random bits. */
  apiId: string;
  /** The RFC 8707 resource URI: one API per resource, and the `aud` of its tokens. */
  resource: string;
  name: string;
  /** The org that declared it; null for the operator's. */
  orgId: string | null;
  scopes: ApiScope[];
  allowedClients: string[];
  /** Org slugs whose clients are admitted. */
  allowedOrgs: string[];
  /** Bumped by every update. */
  revision: number;
  createdAt: number;
  updatedAt: number;
}

export interface ApiStore extends Pick<RecordStore<StoredApi>, 'get'> {
  /** False when the resource is declared already. */
  insert(api: StoredApi): Promise<boolean>;
  getByResource(resource: string): Promise<StoredApi | null>;
  /** Every API, or with `orgId` one org's (null: the operator's), by creation. */
  list(orgId?: string | null): Promise<StoredApi[]>;
  /** Replaces name, scopes and admission when the revision is still `revision`; null when it moved on or the API is gone. */
  update(api: StoredApi, revision: number): Promise<StoredApi | null>;
  remove(apiId: string): Promise<boolean>;
}
