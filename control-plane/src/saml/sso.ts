import { countedEmails } from '../orgs/claimed-addresses.js';
import { createHash, createHmac } from 'node:crypto';
import type { AssuranceLevel } from '#lib/assurance/assurance.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { checkAuthnRequest, parseAuthnRequest } from '#lib/saml/authn-request.js';
import {
  decodePostMessage,
  decodeRedirectMessage,
  redirectQueryConsistent,
  redirectSignedOctets,
  signRedirectQuery,
  verifyPostSignature,
  verifyRedirectSignature,
} from '#lib/saml/bindings.js';
import { NAMEID_FORMAT, NS, STATUS } from '#lib/saml/constants.js';
import { decideSso, type SsoDecision } from '#lib/saml/decide.js';
import { parseLogoutRequest } from '#lib/saml/logout-request.js';
import { buildIdpMetadata } from '#lib/saml/metadata.js';
import { buildLogoutResponse, buildSignedErrorResponse, buildSignedResponse } from '#lib/saml/response.js';
import { SamlXmlError, parseXml } from '#lib/saml/xml.js';
import { releaseParts, releasedSources } from '#lib/saml/provider.js';
import type { ConsentStanding } from '#lib/consent/decide-consent.js';
import { randomToken } from '#lib/crypto/random.js';
import type { AccessDecision } from '#lib/access/evaluate-access.js';
import { checkSignInAccess } from '../clients/sign-in-access.js';
import { askConsent, recordConsent, samlParty, takeApproval, type Party } from '../consent/gate.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import type { StoredSamlProvider } from '../storage/interface.js';
import { endSessionIn } from '../sessions/end-session.js';
import { ASSERTION_VALIDITY_SECONDS, samlKeyRing } from './key-ring.js';

export type SamlServices = Pick<ControlPlaneServices, 'storage' | 'state' | 'events' | 'now' | 'config' | 'secrets'>;

/** AuthnRequest IssueInstant must be within this of our clock (saml-profiles §4.1.4.1 leaves it to the IdP). */
export const SKEW_MS = 300_000;
/** A request waiting for sign-in or step-up lives this long. */
const PENDING_TTL_MS = 15 * 60_000;
const RELAY_STATE_MAX = 2048;

export const samlUrls = (issuer: string) => ({
  entityId: `${issuer}/saml/metadata`,
  sso: `${issuer}/saml/sso`,
  slo: `${issuer}/saml/slo`,
});

export async function idpMetadata(services: SamlServices): Promise<string> {
  const urls = samlUrls(services.config.issuer);
  return buildIdpMetadata({
    entityId: urls.entityId,
    ssoUrl: urls.sso,
    sloUrl: urls.slo,
    certificatesPem: await samlKeyRing(services).certificates(),
  });
}

/** A message as it arrived: the binding, the encoded SAMLRequest, RelayState and (Redirect) the raw query. */
export interface IncomingMessage {
  binding: 'redirect' | 'post';
  message: string;
  relayState?: string;
  /** The query string exactly as received (Redirect binding signatures cover it). */
  rawQuery?: string;
  /** Redirect binding: every parameter as the query parser decoded it (checked against `rawQuery`). */
  decoded?: Record<string, string | undefined>;
}

/** A checked request waiting for the session it needs; kept in shared state under an unguessable id. */
export interface PendingSso {
  providerId: string;
  /** The AuthnRequest ID, or null for IdP-initiated sign-in. */
  requestId: string | null;
  acsUrl: string;
  nameIdFormat: string;
  requiredAssurance?: AssuranceLevel | null;
  forceAuthn: boolean;
  isPassive: boolean;
  relayState?: string;
  receivedAt: number;
}

const toInvalid = (error: unknown): never => {
  if (error instanceof SamlXmlError) throw fail('saml_request_invalid', error.message);
  throw error;
};

function relay(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value.length > RELAY_STATE_MAX) throw fail('saml_request_invalid', 'RelayState is too long');
  return value;
}

function hasEmbeddedSignature(xml: string): boolean {
  try {
    return parseXml(xml).getElementsByTagNameNS(NS.dsig, 'Signature').length > 0;
  } catch (error) {
    return toInvalid(error);
  }
}

/**
 * Decodes and authenticates a request message for `expectRoot` (AuthnRequest or LogoutRequest):
 * the provider named by its Issuer, then its signature against that provider's pinned
 * certificate only. Answers the XML to read: for the POST binding, the signed element itself.
 */
async function authenticate(
  services: SamlServices,
  incoming: IncomingMessage,
  issuerOf: (xml: string) => string,
  requireSignature: (p: StoredSamlProvider) => boolean,
): Promise<{ xml: string; provider: StoredSamlProvider; signed: boolean }> {
  // Before anything is read: the handler and the signature check must see the same parameters.
  if (incoming.binding === 'redirect' && !redirectQueryConsistent(incoming.rawQuery ?? '', incoming.decoded ?? {}))
    throw fail(
      'saml_signature_invalid',
      'the query names a parameter in percent-encoding or twice, or reads differently from the octets it signs',
    );
  let xml: string;
  try {
    xml =
      incoming.binding === 'redirect' ? decodeRedirectMessage(incoming.message) : decodePostMessage(incoming.message);
  } catch (error) {
    return toInvalid(error);
  }
  const issuer = issuerOf(xml);
  const provider = await services.storage.saml.providerByEntityId(issuer);
  if (!provider) throw fail('saml_unknown_provider', "the request's Issuer is not a registered service provider");
  let signed = false;
  if (incoming.binding === 'redirect') {
    const query = incoming.rawQuery ?? '';
    if (redirectSignedOctets(query) !== null || /(^|&)Signature=/.test(query)) {
      if (!verifyRedirectSignature(query, provider.certificatePem))
        throw fail(
          'saml_signature_invalid',
          "the request's signature does not verify against the service provider's registered certificate",
        );
      signed = true;
    }
    if (hasEmbeddedSignature(xml))
      throw fail(
        'saml_signature_invalid',
        'a Redirect-binding message carries its signature in the query, not in the XML',
      );
  } else if (hasEmbeddedSignature(xml)) {
    const verified = verifyPostSignature(xml, provider.certificatePem);
    if (verified === null)
      throw fail(
        'saml_signature_invalid',
        "the request's signature does not verify against the service provider's registered certificate",
      );
    xml = verified;
    signed = true;
  }
  if (!signed && requireSignature(provider))
    throw fail('saml_signature_invalid', 'this service provider signs its requests, and this one is unsigned');
  return { xml, provider, signed };
}

function issuerOf(xml: string, parse: (xml: string) => { issuer: string }): string {
  return parse(xml).issuer;
}

/** Claims the request ID once per provider (shared state): a replay is refused. */
async function claimRequestId(services: SamlServices, provider: StoredSamlProvider, id: string): Promise<void> {
  const key = `saml:request-id:${createHash('sha256').update(`${provider.id}\n${id}`).digest('base64url')}`;
  // Kept past the IssueInstant window, after which the request is refused as stale anyway.
  if (!(await services.state.setIfAbsent(key, '1', 2 * SKEW_MS + 60_000)))
    throw fail('saml_request_replayed', 'a SAML request with this ID was received already');
}

/** An AuthnRequest over either binding, checked all the way (docs/saml.md#what-is-refused). */
export async function receiveAuthnRequest(services: SamlServices, incoming: IncomingMessage): Promise<PendingSso> {
  const relayState = relay(incoming.relayState);
  const { xml, provider, signed } = await authenticate(
    services,
    incoming,
    (x) => issuerOf(x, parseAuthnRequest),
    (p) => p.wantSignedRequests,
  );
  const request = parseAuthnRequest(xml);
  const now = services.now();
  const checked = checkAuthnRequest(
    request,
    { entityId: provider.entityId, acsUrls: provider.acsUrls, nameIdFormat: provider.nameIdFormat },
    {
      ssoUrl: samlUrls(services.config.issuer).sso,
      now,
      skewMs: SKEW_MS,
      signed,
    },
  );
  await claimRequestId(services, provider, request.id);
  return {
    providerId: provider.id,
    requestId: request.id,
    acsUrl: checked.acsUrl,
    nameIdFormat: checked.nameIdFormat,
    ...(checked.requiredAssurance !== undefined ? { requiredAssurance: checked.requiredAssurance } : {}),
    forceAuthn: checked.forceAuthn,
    isPassive: checked.isPassive,
    ...(relayState ? { relayState } : {}),
    receivedAt: now,
  };
}

/** IdP-initiated sign-in (saml-profiles §4.1.5): only for a provider that allows it, to its first ACS URL. */
export async function idpInitiated(
  services: SamlServices,
  providerRef: string,
  relayState: string | undefined,
): Promise<PendingSso> {
  const provider =
    (/^sp_/.test(providerRef) ? await services.storage.saml.provider(providerRef) : null) ??
    (await services.storage.saml.providerByEntityId(providerRef));
  if (!provider || !provider.allowIdpInitiated)
    throw fail(
      'saml_unknown_provider',
      'no service provider that accepts IdP-initiated sign-in is registered under that name',
    );
  const state = relay(relayState);
  return {
    providerId: provider.id,
    requestId: null,
    acsUrl: provider.acsUrls[0]!,
    nameIdFormat: provider.nameIdFormat,
    forceAuthn: false,
    isPassive: false,
    ...(state ? { relayState: state } : {}),
    receivedAt: services.now(),
  };
}

export async function park(services: SamlServices, pending: PendingSso): Promise<string> {
  const id = randomToken(24);
  await services.state.set(`saml:pending:${id}`, JSON.stringify(pending), PENDING_TTL_MS);
  return id;
}

export async function parked(services: SamlServices, id: string): Promise<PendingSso> {
  const stored = /^[A-Za-z0-9_-]{32}$/.test(id) ? await services.state.get(`saml:pending:${id}`) : null;
  if (!stored)
    throw fail('saml_request_invalid', 'this sign-in request has expired; go back to the application and start again');
  return JSON.parse(stored) as PendingSso;
}

export function decide(pending: PendingSso, session: SessionView | undefined): SsoDecision {
  return decideSso(pending, session ? { assurance: session.assurance, authTime: session.authTime } : undefined);
}

/**
 * Who may sign in (docs/saml.md#who-may-sign-in): the provider's `access.orgs` through the same
 * evaluation as a client's; a refusal leaves a `signin.access_denied` receipt (transport `saml`).
 * Asked before the consent gate, so an account the provider does not admit never sees its
 * approval page, and again when the Response is built, so no path past the page skips it.
 */
export async function samlAdmission(
  services: SamlServices,
  provider: StoredSamlProvider,
  identityId: string,
): Promise<AccessDecision> {
  return checkSignInAccess(services, { id: provider.id, orgs: provider.accessOrgs ?? undefined }, identityId, 'saml');
}

/** A parked request's provider, or the refusal that it is gone. */
export async function providerOf(services: SamlServices, pending: PendingSso): Promise<StoredSamlProvider> {
  const provider = await services.storage.saml.provider(pending.providerId);
  if (!provider) throw fail('saml_unknown_provider', 'the service provider is no longer registered');
  return provider;
}

/** What the consent gate needs to know about a parked request: the provider as a party, and what it would receive. */
export interface SamlConsent {
  standing: ConsentStanding;
  party: Party;
  provider: StoredSamlProvider;
  /** The attribute sources the assertion would carry. */
  sources: string[];
  /** The same with the SAML names each is sent under, for the approval page. */
  release: ReturnType<typeof releaseParts>;
}

/**
 * Asks the consent gate whether the account approved the provider for what its assertion would
 * carry (docs/saml.md#consent): an installation-owned provider is first-party; an org's needs
 * the account's approval, which covers a later assertion only while its attributes stay within it.
 */
export async function samlConsent(
  services: SamlServices,
  pending: PendingSso,
  session: SessionView,
): Promise<SamlConsent> {
  const provider = await providerOf(services, pending);
  const party = samlParty(provider);
  const sources = releasedSources(pending.nameIdFormat, provider.attributes);
  const standing = await askConsent(services, session.identityId, party, { scopes: sources });
  return { standing, party, provider, sources, release: releaseParts(pending.nameIdFormat, provider.attributes) };
}

/**
 * The approval page (or the not-admitted page) came back (its token offered to this session for
 * this parked request). Approval records the release the page named; either way the caller
 * answers the parked request next (an assertion, or a signed RequestDenied). A token from the
 * not-admitted page never approves, whatever decision comes with it.
 */
export async function answerApproval(
  services: SamlServices,
  input: { token: unknown; pendingId: unknown; session: SessionView | undefined; approve: boolean },
): Promise<{ pendingId: string; approved: boolean }> {
  const { session } = input;
  const bound = await takeApproval(services, 'saml', input.token, session?.id);
  const pendingId = bound?.pendingId;
  if (!session || pendingId === undefined || pendingId !== input.pendingId)
    throw fail(
      'saml_request_invalid',
      'this approval has expired or belongs to another sign-in; go back to the application and start again',
    );
  if (!input.approve || bound?.refused === '1') return { pendingId, approved: false };
  const consent = await samlConsent(services, await parked(services, pendingId), session);
  // Only what the page named is approved: a provider edited while it was open asks again.
  if (consent.sources.join(' ') !== bound?.sources)
    throw fail('saml_request_invalid', 'the service provider changed while this page was open; start again');
  const now = services.now();
  await services.storage.transaction((tx) =>
    recordConsent(services, tx, {
      identityId: session.identityId,
      party: consent.party,
      release: { scopes: consent.sources },
      at: now,
    }),
  );
  return { pendingId, approved: true };
}

/** What the auto-submitting form posts to the ACS URL. */
export interface PostForm {
  acsUrl: string;
  samlResponse: string;
  relayState?: string;
}

/**
 * The opaque SessionIndex the SP sees: an HMAC of the session and the provider under a key only
 * this issuer holds, so it names neither the session id nor can be computed by anyone who knows
 * that id (an OIDC client sees `sid`). Only the provider that received an assertion in this
 * session knows it, which is what single logout checks (docs/saml.md#single-logout).
 */
function sessionIndex(services: Pick<SamlServices, 'secrets'>, sessionId: string, providerId: string): string {
  const mac = createHmac('sha256', services.secrets.macKey('saml-session-index'));
  return `_${mac.update(`${sessionId}\n${providerId}`).digest('hex').slice(0, 40)}`;
}

async function attributeValues(
  services: SamlServices,
  provider: StoredSamlProvider,
  session: SessionView,
  verifiedEmail: string | null,
): Promise<Record<string, string[]>> {
  const identity = await services.storage.identities.get(session.identityId);
  const values: Record<string, string[]> = {};
  for (const [name, source] of Object.entries(provider.attributes)) {
    switch (source) {
      case 'sub':
        values[name] = [session.identityId];
        break;
      case 'username':
        values[name] = identity ? [identity.username] : [];
        break;
      case 'display_name':
        values[name] = identity?.displayName ? [identity.displayName] : [];
        break;
      case 'email':
        values[name] = verifiedEmail ? [verifiedEmail] : [];
        break;
      case 'assurance':
        values[name] = [session.assurance];
        break;
      case 'amr':
        values[name] = [...session.amr];
        break;
      default:
        values[name] = [];
    }
  }
  return values;
}

async function verifiedEmailOf(services: SamlServices, identityId: string): Promise<string | null> {
  const [identity, listed] = await Promise.all([
    services.storage.identities.get(identityId),
    services.storage.emails.listByIdentity(identityId),
  ]);
  const emails = await countedEmails(services.storage, identity, listed);
  return emails.filter((e) => e.verifiedAt !== null).sort((a, b) => a.verifiedAt! - b.verifiedAt!)[0]?.email ?? null;
}

/**
 * Issues the signed Response for a parked request (consumed once) and leaves the
 * `saml.assertion_issued` receipt. NameID: persistent = `sub`; emailAddress only when verified,
 * otherwise a signed InvalidNameIDPolicy error Response and no assertion.
 */
export async function issueResponse(
  services: SamlServices,
  pendingId: string,
  session: SessionView,
): Promise<PostForm & { receipt?: string }> {
  const stored = /^[A-Za-z0-9_-]{32}$/.test(pendingId) ? await services.state.take(`saml:pending:${pendingId}`) : null;
  if (!stored)
    throw fail(
      'saml_request_invalid',
      'this sign-in request has expired or was answered already; go back to the application and start again',
    );
  const pending = JSON.parse(stored) as PendingSso;
  const provider = await services.storage.saml.provider(pending.providerId);
  // Re-checked: the provider may have been removed or edited while the user signed in.
  if (!provider || !provider.acsUrls.includes(pending.acsUrl))
    throw fail('saml_unknown_provider', 'the service provider is no longer registered');
  const urls = samlUrls(services.config.issuer);
  const key = await samlKeyRing(services).current();
  const now = services.now();
  const base = {
    issuer: urls.entityId,
    destination: pending.acsUrl,
    ...(pending.requestId ? { inResponseTo: pending.requestId } : {}),
    now,
  };
  const form = (xml: string): PostForm => ({
    acsUrl: pending.acsUrl,
    ...(pending.relayState ? { relayState: pending.relayState } : {}),
    samlResponse: Buffer.from(xml).toString('base64'),
  });
  // Checked again here (the members may have changed since the page): never an assertion to a non-member.
  if (!(await samlAdmission(services, provider, session.identityId)).allowed)
    return form(buildSignedErrorResponse({ ...base, status: STATUS.responder, subStatus: STATUS.requestDenied }, key));
  const verifiedEmail = await verifiedEmailOf(services, session.identityId);
  if (pending.nameIdFormat === NAMEID_FORMAT.email && !verifiedEmail) {
    return {
      acsUrl: pending.acsUrl,
      ...(pending.relayState ? { relayState: pending.relayState } : {}),
      samlResponse: Buffer.from(
        buildSignedErrorResponse(
          {
            ...base,
            status: STATUS.requester,
            subStatus: STATUS.invalidNameIdPolicy,
            message: 'the account has no verified email address',
          },
          key,
        ),
      ).toString('base64'),
    };
  }
  const xml = buildSignedResponse(
    {
      ...base,
      audience: provider.entityId,
      nameId: pending.nameIdFormat === NAMEID_FORMAT.email ? verifiedEmail! : session.identityId,
      nameIdFormat: pending.nameIdFormat,
      sessionIndex: sessionIndex(services, session.id, provider.id),
      authnInstant: session.authTime,
      assurance: session.assurance,
      attributes: await attributeValues(services, provider, session, verifiedEmail),
      validitySeconds: ASSERTION_VALIDITY_SECONDS,
    },
    key,
  );
  const { receipt } = await services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'saml.assertion_issued',
      at: now,
      outcome: 'success',
      providerId: provider.id,
      identityId: session.identityId,
      sessionId: session.id,
      assurance: session.assurance,
      nameIdFormat: pending.nameIdFormat,
      initiated: pending.requestId ? 'sp' : 'idp',
    }),
  );
  return {
    acsUrl: pending.acsUrl,
    samlResponse: Buffer.from(xml).toString('base64'),
    ...(pending.relayState ? { relayState: pending.relayState } : {}),
    ...(receipt ? { receipt } : {}),
  };
}

const SUB_STATUS = {
  NoPassive: STATUS.noPassive,
  NoAuthnContext: STATUS.noAuthnContext,
  RequestDenied: STATUS.requestDenied,
} as const;

/**
 * A signed error Response for a parked request that cannot be met: NoPassive, NoAuthnContext,
 * or RequestDenied (the account has not approved the provider, or declined on the approval page).
 */
export async function errorResponse(
  services: SamlServices,
  pendingId: string,
  status: keyof typeof SUB_STATUS,
): Promise<PostForm> {
  const stored = await services.state.take(`saml:pending:${pendingId}`);
  if (!stored)
    throw fail('saml_request_invalid', 'this sign-in request has expired; go back to the application and start again');
  const pending = JSON.parse(stored) as PendingSso;
  const key = await samlKeyRing(services).current();
  const xml = buildSignedErrorResponse(
    {
      issuer: samlUrls(services.config.issuer).entityId,
      destination: pending.acsUrl,
      ...(pending.requestId ? { inResponseTo: pending.requestId } : {}),
      status: STATUS.responder,
      subStatus: SUB_STATUS[status],
      now: services.now(),
    },
    key,
  );
  return {
    acsUrl: pending.acsUrl,
    samlResponse: Buffer.from(xml).toString('base64'),
    ...(pending.relayState ? { relayState: pending.relayState } : {}),
  };
}

/** A checked LogoutRequest waiting for the browser's session (the POST binding comes back by GET). */
export interface PendingLogout {
  providerId: string;
  requestId: string;
  nameId: string;
  /** The SessionIndex values the request names (saml-core §3.7.1). */
  sessionIndexes: string[];
  relayState?: string;
}

/** A LogoutRequest over either binding: always signed by the pinned certificate (saml-profiles §4.4.4.1). */
export async function receiveLogoutRequest(services: SamlServices, incoming: IncomingMessage): Promise<PendingLogout> {
  const relayState = relay(incoming.relayState);
  const { xml, provider } = await authenticate(
    services,
    incoming,
    (x) => issuerOf(x, parseLogoutRequest),
    () => true,
  );
  const request = parseLogoutRequest(xml);
  if (request.issuer !== provider.entityId)
    throw fail('saml_unknown_provider', 'the Issuer is not this service provider');
  const now = services.now();
  if (request.destination !== undefined && request.destination !== samlUrls(services.config.issuer).slo)
    throw fail('saml_request_invalid', "Destination must be this IdP's SLO URL");
  if (Math.abs(now - request.issueInstant) > SKEW_MS)
    throw fail('saml_request_invalid', 'IssueInstant is outside the allowed clock skew');
  await claimRequestId(services, provider, request.id);
  return {
    providerId: provider.id,
    requestId: request.id,
    nameId: request.nameId,
    sessionIndexes: request.sessionIndexes,
    ...(relayState ? { relayState } : {}),
  };
}

export async function parkLogout(services: SamlServices, pending: PendingLogout): Promise<string> {
  const id = randomToken(24);
  await services.state.set(`saml:logout:${id}`, JSON.stringify(pending), PENDING_TTL_MS);
  return id;
}

export async function takeParkedLogout(services: SamlServices, id: string): Promise<PendingLogout> {
  const stored = /^[A-Za-z0-9_-]{32}$/.test(id) ? await services.state.take(`saml:logout:${id}`) : null;
  if (!stored) throw fail('saml_request_invalid', 'this sign-out request has expired or was answered already');
  return JSON.parse(stored) as PendingLogout;
}

/**
 * Ends the browser's session only when this provider was issued an assertion in it: the request
 * names the SessionIndex that assertion carried (an HMAC only this issuer can compute) and the
 * NameID (its `sub`, or its verified email) of the session's account. Any other provider, even
 * one that signs a LogoutRequest naming the account, ends nothing, and its LogoutResponse says
 * `Requester/UnknownPrincipal`, not Success. Leaves a `saml.logout` receipt and answers where to
 * send the browser: the SP's SLO URL with a signed LogoutResponse (Redirect binding), or null
 * for our own page.
 */
export async function completeLogout(
  services: SamlServices,
  pending: PendingLogout,
  session: SessionView | undefined,
): Promise<{ redirect: string | null; ended: boolean; receipt?: string }> {
  const provider = await services.storage.saml.provider(pending.providerId);
  if (!provider) throw fail('saml_unknown_provider', 'the service provider is no longer registered');
  const now = services.now();
  let matches = false;
  if (session && (pending.sessionIndexes ?? []).includes(sessionIndex(services, session.id, provider.id))) {
    matches =
      pending.nameId === session.identityId ||
      (pending.nameId.includes('@') &&
        (await verifiedEmailOf(services, session.identityId)) === pending.nameId.toLowerCase());
  }
  const { receipt } = await services.storage.transaction(async (tx) => {
    // One transaction: the session ends (with its grants) and saml.logout is recorded together.
    if (matches && session) await endSessionIn(services, tx, session, now);
    return services.events.record(tx, {
      type: 'saml.logout',
      at: now,
      outcome: 'success',
      providerId: provider.id,
      identityId: matches && session ? session.identityId : null,
      sessionId: matches && session ? session.id : null,
    });
  });
  if (!provider.sloUrl) return { redirect: null, ended: matches, ...(receipt ? { receipt } : {}) };
  const key = await samlKeyRing(services).current();
  const xml = buildLogoutResponse({
    issuer: samlUrls(services.config.issuer).entityId,
    destination: provider.sloUrl,
    inResponseTo: pending.requestId,
    now,
    ...(matches ? {} : { status: { code: STATUS.requester, subCode: STATUS.unknownPrincipal } }),
  });
  const query = signRedirectQuery('SAMLResponse', xml, pending.relayState, key.privateKeyPem);
  return {
    redirect: `${provider.sloUrl}${provider.sloUrl.includes('?') ? '&' : '?'}${query}`,
    ended: matches,
    ...(receipt ? { receipt } : {}),
  };
}
