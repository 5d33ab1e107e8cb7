import { fail } from '#lib/errors/keyplane-error.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import { decodePostMessage } from '#lib/saml/bindings.js';
import { SamlXmlError } from '#lib/saml/xml.js';
import { upstreamResponseClaims, verifyUpstreamResponse } from '#lib/saml/verify-upstream-response.js';
import type { StoredConnection } from '../storage/interface.js';
import type { SignInBrowser } from '../sessions/start-session.js';
import type { CallbackOutcome, FederationServices } from './federated-sign-in.js';
import { openFederatedSession, recordRefusal } from './open-session.js';
import { samlRequestKey, samlSettings, spUrls, type SamlRoundTrip, type SamlUpstreamSubject } from './saml-upstream.js';
import { subjectHash } from './subject-hash.js';

/**
 * The end of a sign-in through a SAML connection (docs/federation.md#saml-connections). The IdP's
 * Response arrives at the ACS by a cross-site POST, which carries none of the browser's cookies:
 * the ACS verifies it (signature, Audience, Recipient, times), takes its InResponseTo once and
 * refuses a second use of its assertion ID, keeps the outcome under a one-time id and sends the
 * browser to `GET …/continue`. There the browser's own binding cookie must be the one the request
 * was started with (a response posted into another browser stops here), and the sign-in finishes
 * through the same code as an OIDC callback.
 */

/** Clock skew allowed on the assertion's times. */
const SKEW_MS = 60_000;
/** A verified response waits this long for its browser at `continue`. */
const RESULT_TTL_MS = 5 * 60_000;
const RESULT_ID = /^[A-Za-z0-9_-]{32}$/;

const resultKey = (id: string) => `fed:saml-result:${id}`;
const assertionKey = (connectionId: string, assertionId: string) =>
  `fed:saml-assertion:${sha256Hex(`${connectionId}\n${assertionId}`)}`;

interface SamlResult {
  trip: SamlRoundTrip;
  nameId: string;
  sessionIndex?: string;
  claims: Record<string, unknown>;
}

async function samlConnection(services: FederationServices, connectionId: string): Promise<StoredConnection> {
  const connection = await services.storage.connections.get(connectionId);
  if (!connection || connection.type !== 'saml') throw fail('not_found', 'no such connection');
  return connection;
}

/** Every refusal of a federated sign-in leaves `federation.refused` naming its reason (opaque ids only). */
async function refused<T>(
  services: FederationServices,
  connectionId: string,
  run: (subject: (hash: string) => void) => Promise<T>,
): Promise<T> {
  let subject: string | null = null;
  try {
    return await run((hash) => {
      subject = hash;
    });
  } catch (error) {
    await recordRefusal(services, connectionId, subject, error);
    throw error;
  }
}

/** Where the ACS sends the browser: on to `continue`, or (an IdP-initiated response the connection allows) to start again. */
export type AcsOutcome = { kind: 'continue' | 'restart'; location: string };

/**
 * `POST /federation/{connectionId}/saml/acs`: the Response verified against the IdP's pinned
 * certificates; an IdP-initiated one (no InResponseTo) refused, or with `allow_idp_initiated`
 * restarted as an SP-initiated sign-in from the sign-in page; otherwise its InResponseTo taken
 * once, its assertion ID recorded until it expires, and the outcome kept for `continue`.
 */
export async function acceptSamlResponse(
  services: FederationServices,
  connectionId: string,
  samlResponse: string,
): Promise<AcsOutcome> {
  const connection = await samlConnection(services, connectionId);
  return refused(services, connectionId, async (seen) => {
    const settings = samlSettings(connection);
    const urls = spUrls(services.config.issuer, connectionId);
    let xml: string;
    try {
      xml = decodePostMessage(samlResponse);
    } catch (error) {
      throw fail('upstream_response_invalid', error instanceof SamlXmlError ? error.message : 'not a SAML response');
    }
    const now = services.now();
    const verified = verifyUpstreamResponse(xml, {
      idpEntityId: settings.idpEntityId,
      certificatesPem: settings.certificatesPem,
      spEntityId: urls.entityId,
      acsUrl: urls.acsUrl,
      now,
      skewMs: SKEW_MS,
    });
    seen(subjectHash(services, connectionId, verified.nameId));
    if (verified.inResponseTo === null) {
      // Login CSRF: an unsolicited response binds to no browser. Even where allowed it signs
      // nobody in; the person starts again from the sign-in page, SP-initiated.
      if (!settings.allowIdpInitiated)
        throw fail(
          'federation_state_unknown',
          'an IdP-initiated response (no InResponseTo) is refused: start the sign-in here',
        );
      return { kind: 'restart', location: `/auth?connection=${encodeURIComponent(connectionId)}` };
    }
    const replayTtl = Math.max(verified.notOnOrAfter + SKEW_MS - now, 60_000);
    if (!(await services.state.setIfAbsent(assertionKey(connectionId, verified.assertionId), '1', replayTtl)))
      throw fail('upstream_response_invalid', 'this assertion was used already (a replay)');
    const raw = await services.state.take(samlRequestKey(verified.inResponseTo));
    if (raw === null)
      throw fail(
        'federation_state_unknown',
        'this response answers no request of this server (InResponseTo unknown, expired or answered already)',
      );
    const trip = JSON.parse(raw) as SamlRoundTrip;
    if (trip.connectionId !== connectionId)
      throw fail('federation_state_unknown', 'this response answers a request of another connection');
    const resultId = randomToken(24);
    const result: SamlResult = {
      trip,
      nameId: verified.nameId,
      ...(verified.sessionIndex !== undefined ? { sessionIndex: verified.sessionIndex } : {}),
      claims: upstreamResponseClaims(verified),
    };
    await services.state.set(resultKey(resultId), JSON.stringify(result), RESULT_TTL_MS);
    return {
      kind: 'continue',
      location: `/federation/${encodeURIComponent(connectionId)}/continue?result=${resultId}`,
    };
  });
}

/**
 * `GET /federation/{connectionId}/continue`: the verified outcome taken once, in the browser that
 * started the sign-in (its binding cookie), then signed in like an OIDC callback, or, for "test
 * this connection", the claims shown.
 */
export async function continueSamlSignIn(
  services: FederationServices,
  connectionId: string,
  input: { resultId: string | undefined; bindingToken: string | undefined; browser: SignInBrowser },
): Promise<CallbackOutcome> {
  const connection = await samlConnection(services, connectionId);
  return refused(services, connectionId, async (seen) => {
    const raw =
      input.resultId !== undefined && RESULT_ID.test(input.resultId)
        ? await services.state.take(resultKey(input.resultId))
        : null;
    if (raw === null) throw fail('federation_state_unknown', 'this sign-in is unknown, expired or finished already');
    const result = JSON.parse(raw) as SamlResult;
    if (result.trip.connectionId !== connectionId)
      throw fail('federation_state_unknown', 'this sign-in was started for another connection');
    const subject = subjectHash(services, connectionId, result.nameId);
    seen(subject);
    // Login CSRF: a response posted into another browser finds no binding cookie of its own there.
    if (input.bindingToken === undefined || !constantEquals(result.trip.binding, sha256Hex(input.bindingToken)))
      throw fail('federation_state_unknown', 'this sign-in was started in another browser');
    if (result.trip.testedBy !== undefined) {
      await services.events.record(services.storage, {
        type: 'federation.tested',
        at: services.now(),
        outcome: 'success',
        actor: { type: 'person', id: result.trip.testedBy },
        connectionId,
        subject,
      });
      return { kind: 'tested', claims: result.claims };
    }
    // What the LogoutRequest at sign-out names, sealed with the session where an OIDC sign-in keeps its ID token.
    const logoutSubject: SamlUpstreamSubject = {
      nameId: result.nameId,
      ...(result.sessionIndex !== undefined ? { sessionIndex: result.sessionIndex } : {}),
    };
    return openFederatedSession(
      services,
      connection,
      { claims: result.claims, subject: result.nameId, idToken: JSON.stringify(logoutSubject) },
      { returnTo: result.trip.returnTo, binding: result.trip.binding, browser: input.browser },
    );
  });
}
