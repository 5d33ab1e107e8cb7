import type { IncomingMessage, ServerResponse } from 'node:http';
import Provider from 'oidc-provider';
import { makeTestCa, startHttpsServer, type TestCa } from './tls.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

/**
 * node-oidc-provider as the upstream identity provider of a connection: https with a throw-away
 * CA (trusted by the control plane through `fetch.caFile`), its own login and consent pages
 * (devInteractions: any login name, any password), and clients added while the test runs,
 * since a connection's redirect URI is known only once the connection exists.
 */
export interface UpstreamOidc {
  issuer: string;
  tls: TestCa;
  /** Registers (or replaces) a client of the upstream. */
  addClient(metadata: Record<string, unknown>): void;
  /** Every request the upstream received, as `METHOD path`. */
  requests: string[];
}

/** The account a login name is: an address-like name is also its e-mail and its UPN (`preferred_username`). */
function claimsOf(accountId: string): Record<string, unknown> {
  return {
    sub: accountId,
    ...(accountId.includes('@') ? { email: accountId, email_verified: true, preferred_username: accountId } : {}),
    name: `Upstream ${accountId.split('@')[0]}`,
  };
}

/** What the suites use of oidc-provider's adapter payloads and provider (it ships no types). */
type AdapterPayload = Record<string, unknown> & {
  userCode?: string;
  uid?: string;
  grantId?: string;
  consumed?: number;
};
interface UpstreamProvider {
  proxy: boolean;
  callback(): (req: IncomingMessage, res: ServerResponse) => unknown;
}
const ProviderClass = Provider as unknown as new (issuer: string, config: Record<string, unknown>) => UpstreamProvider;

export async function startUpstreamOidc(t: Tap): Promise<UpstreamOidc> {
  const tls = makeTestCa(t);
  const clients = new Map<string, AdapterPayload>();
  const stores = new Map<string, Map<string, AdapterPayload>>();
  // A small adapter: clients from the map above, everything else in memory (one-time use kept).
  class TestAdapter {
    private readonly store: Map<string, AdapterPayload>;
    constructor(private readonly model: string) {
      let store = stores.get(model);
      if (!store) stores.set(model, (store = new Map()));
      this.store = store;
    }
    async upsert(id: string, payload: AdapterPayload): Promise<void> {
      this.store.set(id, payload);
    }
    async find(id: string): Promise<AdapterPayload | undefined> {
      return this.model === 'Client' ? clients.get(id) : this.store.get(id);
    }
    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return [...this.store.values()].find((p) => p.userCode === userCode);
    }
    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return [...this.store.values()].find((p) => p.uid === uid);
    }
    async consume(id: string): Promise<void> {
      const payload = this.store.get(id);
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string): Promise<void> {
      this.store.delete(id);
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      for (const [id, p] of this.store) if (p.grantId === grantId) this.store.delete(id);
    }
  }
  const handler: { serve?: ReturnType<UpstreamProvider['callback']> } = {};
  const server = await startHttpsServer(t, tls, (req, res) => {
    if (handler.serve) void handler.serve(req, res);
    else res.writeHead(503).end();
  });
  const issuer = server.origin;
  const provider = new ProviderClass(issuer, {
    adapter: TestAdapter,
    findAccount: async (_ctx: unknown, accountId: string) => ({ accountId, claims: async () => claimsOf(accountId) }),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ['upstream-test-cookie-key'] },
    clientAuthMethods: ['client_secret_basic', 'private_key_jwt'],
  });
  // oidc-provider sits behind nothing here; it still must not think the request was plain http.
  provider.proxy = false;
  handler.serve = provider.callback();
  return {
    issuer,
    tls,
    requests: server.requests,
    addClient: (metadata) => {
      clients.set(metadata.client_id as string, {
        grant_types: ['authorization_code'],
        response_types: ['code'],
        ...metadata,
      });
    },
  };
}
