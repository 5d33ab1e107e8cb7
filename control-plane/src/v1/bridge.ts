import { Counter, type Registry } from 'prom-client';
import { fail } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import { mintMacaroon, verifyMacaroon } from '#lib/v1/macaroon.js';
import type { ConsentStanding } from '#lib/consent/decide-consent.js';
import { askConsent, clientParty, recordConsent, takeApproval } from '../consent/gate.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';
import { checkClientAccess } from '../clients/sign-in-access.js';

/**
 * The deprecated v1 script bridge (docs/v1-bridge.md): a relying party that set `v1_bridge: true`
 * gets, at one of its registered redirect URIs (its v1 return URLs), a short-lived macaroon in
 * the `session` query parameter, and redeems it server to server at `POST /auth/verify-session`.
 * Kept only as a measured rollback bridge; v2 (code flow + PKCE) never puts a bearer-like
 * session in a URL.
 */
export type BridgeServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'secrets' | 'events' | 'metrics' | 'now'
>;

/** What the v1 token releases: the account's id (`identityId`), what OIDC's `openid` scope releases. */
export const V1_RELEASE = { scopes: ['openid'] } as const;

/** The consent gate's answer for the v1 client: only a first-party or approved client gets a token. */
export async function v1Consent(
  services: BridgeServices,
  client: StoredClient,
  identityId: string,
): Promise<ConsentStanding> {
  return askConsent(services, identityId, clientParty(client), V1_RELEASE);
}

/**
 * The approval page came back for `to` (its token offered to this session for that URL): the
 * client behind it, with the approval recorded when the person approved.
 */
export async function answerV1Approval(
  services: BridgeServices,
  input: { token: unknown; to: string; session: { id: string; identityId: string } | undefined; approve: boolean },
): Promise<StoredClient> {
  const bound = await takeApproval(services, 'v1', input.token, input.session?.id);
  if (!input.session || !bound || bound.to !== input.to)
    throw fail('access_denied', 'this approval has expired or belongs to another sign-in; go back to the app');
  const client = await findV1Client(services, input.to);
  if (input.approve) {
    const { identityId } = input.session;
    const now = services.now();
    await services.storage.transaction((tx) =>
      recordConsent(services, tx, { identityId, party: clientParty(client), release: V1_RELEASE, at: now }),
    );
  }
  return client;
}

const ID_PREFIX = 'v1s_';

/** The one v1 client whose registered redirect URIs hold exactly `returnUrl`, or a refusal. */
export async function findV1Client(services: BridgeServices, returnUrl: string): Promise<StoredClient> {
  const clients = (await services.storage.clients.findByRedirectUri(returnUrl)).filter(
    (client) => client.metadata.v1_bridge === true,
  );
  if (clients.length !== 1)
    throw fail(
      'invalid_redirect_uri',
      'the return URL is not a registered v1 return URL of a client with the v1 bridge on',
    );
  return clients[0]!;
}

function rootKey(services: BridgeServices): Buffer {
  return services.secrets.macKey('v1-session-macaroon');
}

/** Mints the v1 session token for a signed-in session and receipts it. */
export async function issueV1SessionToken(
  services: BridgeServices,
  input: { client: StoredClient; identityId: string; sessionId: string },
): Promise<{ token: string; receipt?: string }> {
  // The same question as every other path (docs/security.md#access-rules-on-every-path).
  const access = await checkClientAccess(services, input.client, input.identityId, 'v1');
  if (!access.allowed) throw fail('access_denied', 'this account is not a member of an organization this app admits');
  const now = services.now();
  const expires = Math.floor(now / 1000) + services.config.v1.sessionTokenLifetime;
  const token = mintMacaroon(rootKey(services), {
    location: services.config.issuer,
    identifier: `${ID_PREFIX}${randomToken(16)}`,
    caveats: [
      `client_id = ${input.client.clientId}`,
      `exp = ${expires}`,
      `identity = ${input.identityId}`,
      `session = ${input.sessionId}`,
    ],
  });
  const { receipt } = await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'v1.session_issued',
      at: now,
      outcome: 'success',
      clientId: input.client.clientId,
      identityId: input.identityId,
    }),
  );
  return { token, ...(receipt ? { receipt } : {}) };
}

/**
 * Redeems a v1 session token: the macaroon verifies, every caveat is one this issuer adds and
 * holds (not expired, the client still has the bridge on, the session is still live). Anything
 * else is the same refusal, so a caller learns nothing about why.
 */
export async function verifyV1SessionToken(
  services: BridgeServices,
  token: string,
): Promise<{ identityId: string; clientId: string }> {
  const refused = () => fail('invalid_session_token', 'the v1 session token is not valid');
  const macaroon = verifyMacaroon(rootKey(services), token);
  if (!macaroon || !macaroon.identifier.startsWith(ID_PREFIX)) throw refused();
  const facts = new Map<string, string>();
  for (const caveat of macaroon.caveats) {
    const match = /^(client_id|exp|identity|session) = (\S+)$/.exec(caveat);
    // A caveat this issuer does not understand cannot be satisfied (macaroon attenuation is opt-in).
    if (!match) throw refused();
    const [, name, value] = match;
    // Repeated caveats must all hold: two different values can never both hold here.
    if (facts.has(name!) && facts.get(name!) !== value) throw refused();
    facts.set(name!, value!);
  }
  const clientId = facts.get('client_id');
  const identityId = facts.get('identity');
  const sessionId = facts.get('session');
  const exp = Number(facts.get('exp'));
  if (!clientId || !identityId || !sessionId || !Number.isSafeInteger(exp) || exp * 1000 <= services.now())
    throw refused();
  const client = await services.storage.clients.get(clientId);
  if (client?.metadata.v1_bridge !== true) throw refused();
  const live = await services.storage.sessions.listLive(identityId, services.now());
  if (!live.some((session) => session.sessionId === sessionId)) throw refused();
  return { identityId, clientId };
}

const counters = new WeakMap<Registry, Counter<'endpoint' | 'outcome'>>();

/** `kp_v1_bridge_requests_total{endpoint, outcome}`: how much the bridge is still used, before its sunset. */
export function v1RequestCounter(registry: Registry): Counter<'endpoint' | 'outcome'> {
  let counter = counters.get(registry);
  if (!counter) {
    counter = new Counter({
      name: 'kp_v1_bridge_requests_total',
      help: 'Requests to the deprecated v1 bridge, by endpoint and outcome.',
      labelNames: ['endpoint', 'outcome'],
      registers: [registry],
    });
    counters.set(registry, counter);
  }
  return counter;
}

/** RFC 9745 `Deprecation`, RFC 8594 `Sunset` and a `Link` to the migration page, on every v1 response. */
export function v1DeprecationHeaders(config: BridgeServices['config']): Record<string, string> {
  const deprecated = Math.floor(Date.parse(`${config.v1.deprecatedAt}T00:00:00Z`) / 1000);
  return {
    deprecation: `@${deprecated}`,
    sunset: new Date(`${config.v1.sunset}T00:00:00Z`).toUTCString(),
    link: `<${config.issuer}/auth/v1/migrate>; rel="deprecation"; type="text/html"`,
  };
}
