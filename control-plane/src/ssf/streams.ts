import { fail } from '#lib/errors/keyplane-error.js';
import { randomId } from '#lib/crypto/random.js';
import { checkFreeText } from '#lib/accounts/username.js';
import { POLL_DELIVERY, PUSH_DELIVERY, SUPPORTED_EVENT_TYPES, accountNamedBy } from '#lib/ssf/security-event.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor, DomainEvent } from '../events/types.js';
import type { SsfStreamCounts, SsfStreamStatus, StoredClient, StoredSsfStream, Stores } from '../storage/interface.js';
import { fetchPolicyFor } from '../webhooks/outbox.js';
import { authorizationContext, queueVerification, signedSet } from './outbox.js';

/**
 * Stream management for Shared Signals receivers (SSF 1.0 §8.1;
 * docs/events.md#shared-signals-streams-from-a-receivers-view). Every operation acts for the
 * receiver's client, named by its client-credentials token, and sees only that client's streams:
 * another client's stream is as absent as one that never existed.
 */

export type SsfStreamServices = Pick<
  ControlPlaneServices,
  'storage' | 'events' | 'keys' | 'config' | 'now' | 'secrets' | 'fetcher' | 'ssfTargets' | 'ssfDelivery'
>;

/** The scopes of the transmitter: `ssf.manage` changes streams, `ssf.read` reads them and polls. */
export const SSF_SCOPES = ['ssf.manage', 'ssf.read'] as const;
/** Streams one receiver may hold. */
const STREAMS_PER_CLIENT = 10;
const EVENTS_MAX = 20;
const URL_MAX = 2048;
const DESCRIPTION_MAX = 200;
const AUTHORIZATION_MAX = 4096;
const STATE_MAX = 256;

/**
 * The `ssf.*` scopes a client may be granted, of those it asks for: only a confidential client
 * owned by the operator or by an org, and only the ones it registered by name
 * (docs/apis.md#client-credentials). A person's own client never receives signals about others.
 */
export function grantableSsfScopes(client: StoredClient, requested: readonly string[]): string[] {
  if (client.type !== 'confidential') return [];
  if (client.ownerId !== null && !client.ownerId.startsWith('org_')) return [];
  const registered = client.metadata.scope.split(' ');
  return requested.filter((scope) => (SSF_SCOPES as readonly string[]).includes(scope) && registered.includes(scope));
}

const receiverActor: Actor = { type: 'system' };

/** SSF 1.0 §8.1.1: a stream's configuration as the receiver reads it (never its Authorization value). */
export function streamConfiguration(issuer: string, stream: StoredSsfStream): Record<string, unknown> {
  return {
    stream_id: stream.streamId,
    iss: issuer,
    aud: stream.clientId,
    delivery:
      stream.delivery === 'push'
        ? { method: PUSH_DELIVERY, endpoint_url: stream.endpointUrl }
        : { method: POLL_DELIVERY, endpoint_url: `${issuer}/ssf/poll/${stream.streamId}` },
    events_supported: SUPPORTED_EVENT_TYPES,
    events_requested: stream.eventsRequested,
    events_delivered: stream.eventsRequested.filter((uri) => SUPPORTED_EVENT_TYPES.includes(uri)),
    ...(stream.description ? { description: stream.description } : {}),
  };
}

/** The receiver's own stream, or 404 (another receiver's stream is not told apart from none). */
export async function ownStream(
  services: Pick<SsfStreamServices, 'storage'>,
  clientId: string,
  streamId: unknown,
): Promise<StoredSsfStream> {
  if (typeof streamId !== 'string' || streamId.length === 0 || streamId.length > 100)
    throw fail('invalid_request', 'stream_id must name a stream');
  const stream = await services.storage.ssf.getStream(streamId);
  if (!stream || stream.clientId !== clientId) throw fail('not_found', 'no such stream');
  return stream;
}

/** SSF 1.0 §8.1.1.2: the receiver's streams, oldest first. */
export function listStreams(
  services: Pick<SsfStreamServices, 'storage'>,
  client: StoredClient,
): Promise<StoredSsfStream[]> {
  return services.storage.ssf.listStreams(client.clientId);
}

interface DeliveryInput {
  method?: unknown;
  endpoint_url?: unknown;
  authorization_header?: unknown;
}

/** SSF 1.0 §8.1.1.1: push needs the receiver's https endpoint; a poll stream's endpoint is ours. */
async function checkDelivery(
  services: SsfStreamServices,
  client: StoredClient,
  input: unknown,
): Promise<{ delivery: 'push' | 'poll'; endpointUrl: string | null; authorization: string | null }> {
  if (typeof input !== 'object' || input === null) throw fail('invalid_request', 'delivery must be an object');
  const { method, endpoint_url: url, authorization_header: authorization } = input as DeliveryInput;
  if (method === POLL_DELIVERY) {
    if (url !== undefined)
      throw fail('invalid_request', 'a poll stream takes no endpoint_url: the transmitter names it');
    return { delivery: 'poll', endpointUrl: null, authorization: null };
  }
  if (method !== PUSH_DELIVERY)
    throw fail('invalid_request', `delivery.method must be ${PUSH_DELIVERY} or ${POLL_DELIVERY}`);
  if (typeof url !== 'string' || url.length === 0 || url.length > URL_MAX)
    throw fail('invalid_request', 'a push stream needs delivery.endpoint_url, an https URL');
  if (
    authorization !== undefined &&
    (typeof authorization !== 'string' ||
      authorization.length > AUTHORIZATION_MAX ||
      !/^[\x21-\x7e][\x20-\x7e]*$/.test(authorization))
  )
    throw fail('invalid_request', 'delivery.authorization_header must be one header value');
  // The fetcher's rules at creation too: an internal endpoint is refused now, not only at delivery.
  const checked = await services.fetcher.check(url, fetchPolicyFor(services.config, client.ownerId, url));
  return {
    delivery: 'push',
    endpointUrl: checked.url.href,
    authorization: typeof authorization === 'string' ? authorization : null,
  };
}

function checkEvents(input: unknown): string[] {
  if (input === undefined) return [...SUPPORTED_EVENT_TYPES];
  if (
    !Array.isArray(input) ||
    input.length > EVENTS_MAX ||
    input.some((uri) => typeof uri !== 'string' || uri.length === 0 || uri.length > 200)
  )
    throw fail('invalid_request', `events_requested must be a list of at most ${EVENTS_MAX} event type URIs`);
  return [...new Set(input as string[])];
}

function checkDescription(input: unknown): string | null {
  if (input === undefined || input === null || input === '') return null;
  return checkFreeText(input, DESCRIPTION_MAX, 'invalid_request', 'the description') || null;
}

type StreamEventType = Extract<DomainEvent, { streamId: string }>['type'];

/**
 * Runs `write` and the stream's receipt in one transaction; a change to which streams are enabled
 * or what they asked for reaches the ledger follower at once (`ssfTargets`).
 */
async function commit(
  services: SsfStreamServices,
  type: StreamEventType,
  stream: StoredSsfStream,
  write: (tx: Stores) => Promise<unknown>,
  actor: Actor = receiverActor,
): Promise<{ receipt?: string }> {
  const done = await services.storage.transaction(async (tx) => {
    await write(tx);
    return services.events.record(tx, {
      type,
      at: services.now(),
      outcome: 'success',
      actor,
      streamId: stream.streamId,
      clientId: stream.clientId,
    });
  });
  if (type !== 'ssf.verification_requested' && type !== 'ssf.subjects_changed') await services.ssfTargets.refresh();
  return done;
}

/** SSF 1.0 §8.1.1.1: creates a stream for the receiver. */
export async function createStream(
  services: SsfStreamServices,
  client: StoredClient,
  body: Record<string, unknown>,
): Promise<StoredSsfStream> {
  const delivery = await checkDelivery(services, client, body.delivery);
  const eventsRequested = checkEvents(body.events_requested);
  const description = checkDescription(body.description);
  const now = services.now();
  const streamId = randomId('sst');
  const stream: StoredSsfStream = {
    streamId,
    clientId: client.clientId,
    delivery: delivery.delivery,
    endpointUrl: delivery.endpointUrl,
    authorizationSealed: delivery.authorization
      ? services.secrets.seal(authorizationContext(streamId), delivery.authorization)
      : null,
    eventsRequested,
    description,
    status: 'enabled',
    statusReason: null,
    createdAt: now,
    updatedAt: now,
  };
  await commit(services, 'ssf.stream_created', stream, async (tx) => {
    if ((await tx.ssf.listStreams(client.clientId)).length >= STREAMS_PER_CLIENT)
      throw fail('conflict', `a receiver holds at most ${STREAMS_PER_CLIENT} streams`);
    await tx.ssf.insertStream(stream);
  });
  return stream;
}

/**
 * SSF 1.0 §8.1.1.3 (PATCH, `replace` false) and §8.1.1.4 (PUT, `replace` true): changes what the
 * receiver sent; a replacement sets every member it omits back to its default.
 */
export async function updateStream(
  services: SsfStreamServices,
  client: StoredClient,
  body: Record<string, unknown>,
  replace: boolean,
): Promise<StoredSsfStream> {
  const current = await ownStream(services, client.clientId, body.stream_id);
  if (replace && body.delivery === undefined) throw fail('invalid_request', 'a replacement names its delivery');
  const delivery = body.delivery === undefined ? null : await checkDelivery(services, client, body.delivery);
  if (delivery && delivery.delivery !== current.delivery)
    throw fail('invalid_request', 'a stream keeps its delivery method: create another stream');
  const next: StoredSsfStream = {
    ...current,
    ...(delivery
      ? {
          endpointUrl: delivery.endpointUrl,
          authorizationSealed: delivery.authorization
            ? services.secrets.seal(authorizationContext(current.streamId), delivery.authorization)
            : null,
        }
      : {}),
    eventsRequested:
      body.events_requested !== undefined || replace ? checkEvents(body.events_requested) : current.eventsRequested,
    description: body.description !== undefined || replace ? checkDescription(body.description) : current.description,
    updatedAt: services.now(),
  };
  await commit(services, 'ssf.stream_updated', next, (tx) => tx.ssf.updateStream(next));
  return next;
}

/** SSF 1.0 §8.1.1.5: deletes the stream, its subjects and its undelivered events. */
export async function deleteStream(
  services: SsfStreamServices,
  client: StoredClient,
  streamId: unknown,
): Promise<void> {
  const stream = await ownStream(services, client.clientId, streamId);
  await commit(services, 'ssf.stream_deleted', stream, (tx) => tx.ssf.removeStream(stream.streamId));
}

const STATUSES: readonly SsfStreamStatus[] = ['enabled', 'paused', 'disabled'];

/** Any receiver's stream, for the operator; none is 404. */
async function anyStream(services: Pick<SsfStreamServices, 'storage'>, streamId: string): Promise<StoredSsfStream> {
  const stream = await services.storage.ssf.getStream(streamId);
  if (!stream) throw fail('not_found', 'no such stream');
  return stream;
}

/**
 * The operator's view (docs/console.md#sections, `GET /admin/ssf/streams`): every receiver's
 * streams by id, a page at a time, with how many subjects each holds and its events by state.
 */
export async function listStreamsPage(
  services: Pick<SsfStreamServices, 'storage'>,
  after: string | null,
  limit: number,
): Promise<{ streams: StoredSsfStream[]; counts: Map<string, SsfStreamCounts>; next: string | null }> {
  const streams = await services.storage.ssf.listPage({ after, limit });
  const counts = await services.storage.ssf.counts(streams.map((s) => s.streamId));
  return { streams, counts, next: streams.length === limit ? streams.at(-1)!.streamId : null };
}

/** The reason a receiver reads at the status endpoint after the operator set its stream's status. */
const OPERATOR_REASONS: Record<SsfStreamStatus, string | null> = {
  enabled: null,
  paused: 'paused by the operator',
  disabled: 'disabled by the operator',
};

/**
 * The operator sets a receiver's stream's status (SSF 1.0 §8.1.2: the transmitter may change a
 * stream's status): events are sent only while it is enabled; its receipt names the operator. The
 * receiver reads the new status and its reason at the status endpoint. The console's "Disable"
 * and `PATCH /admin/ssf/streams/{streamId}` both come here; the status it has already is 409.
 */
export async function setStreamStatusAsOperator(
  services: SsfStreamServices,
  streamId: string,
  status: unknown,
  actor: Actor,
): Promise<{ stream: StoredSsfStream; receipt?: string }> {
  if (!STATUSES.includes(status as SsfStreamStatus))
    throw fail('invalid_request', 'status must be enabled, paused or disabled');
  const current = await anyStream(services, streamId);
  if (current.status === status) throw fail('conflict', `the stream is ${current.status} already`);
  const next: StoredSsfStream = {
    ...current,
    status: status as SsfStreamStatus,
    statusReason: OPERATOR_REASONS[status as SsfStreamStatus],
    updatedAt: services.now(),
  };
  const { receipt } = await commit(
    services,
    'ssf.stream_status_changed',
    next,
    (tx) => tx.ssf.updateStream(next),
    actor,
  );
  return { stream: next, ...(receipt ? { receipt } : {}) };
}

/** An operator deletes a receiver's stream with its subjects and undelivered events; the receipt names the operator. */
export async function deleteStreamAsOperator(
  services: SsfStreamServices,
  streamId: string,
  actor: Actor,
): Promise<{ receipt?: string }> {
  const stream = await anyStream(services, streamId);
  return commit(services, 'ssf.stream_deleted', stream, (tx) => tx.ssf.removeStream(stream.streamId), actor);
}

/** SSF 1.0 §8.1.2.2: a receiver pauses or disables its stream; events are sent only while it is enabled. */
export async function setStreamStatus(
  services: SsfStreamServices,
  client: StoredClient,
  body: Record<string, unknown>,
): Promise<StoredSsfStream> {
  const current = await ownStream(services, client.clientId, body.stream_id);
  if (!STATUSES.includes(body.status as SsfStreamStatus))
    throw fail('invalid_request', 'status must be enabled, paused or disabled');
  const reason =
    body.reason === undefined ? null : checkFreeText(body.reason, DESCRIPTION_MAX, 'invalid_request', 'the reason');
  const next: StoredSsfStream = {
    ...current,
    status: body.status as SsfStreamStatus,
    statusReason: reason || null,
    updatedAt: services.now(),
  };
  await commit(services, 'ssf.stream_status_changed', next, (tx) => tx.ssf.updateStream(next));
  return next;
}

/** SSF 1.0 §8.1.4.2: a verification event with the receiver's `state`, delivered like any other. */
export async function requestVerification(
  services: SsfStreamServices,
  client: StoredClient,
  body: Record<string, unknown>,
): Promise<void> {
  const stream = await ownStream(services, client.clientId, body.stream_id);
  if (stream.status !== 'enabled') throw fail('conflict', 'the stream is not enabled');
  if (body.state !== undefined && (typeof body.state !== 'string' || body.state.length > STATE_MAX))
    throw fail('invalid_request', `state must be a string of at most ${STATE_MAX} characters`);
  await commit(services, 'ssf.verification_requested', stream, (tx) =>
    queueVerification(services, tx, stream, body.state as string | undefined),
  );
  services.ssfDelivery.nudge();
}

/**
 * SSF 1.0 §8.1.3.2-3: adds or removes a subject. Only an account that has a live grant to the
 * receiver's client (or an approval of it), or that the client's org manages, is added; any other
 * subject, an unknown account or another issuer's, is accepted and ignored with the same answer
 * (SSF 1.0 §8.1.3.2 lets a transmitter decline silently), so a receiver never learns whether an
 * account exists.
 */
export async function changeSubject(
  services: SsfStreamServices,
  client: StoredClient,
  body: Record<string, unknown>,
  change: 'add' | 'remove',
): Promise<void> {
  const stream = await ownStream(services, client.clientId, body.stream_id);
  const subject = body.subject;
  if (typeof subject !== 'object' || subject === null || typeof (subject as { format?: unknown }).format !== 'string')
    throw fail('invalid_request', 'subject must be an RFC 9493 subject identifier');
  if (body.verified !== undefined && typeof body.verified !== 'boolean')
    throw fail('invalid_request', 'verified must be a boolean');
  const identityId = accountNamedBy(subject, services.config.issuer);
  const now = services.now();
  // The receipt names the stream alone, whatever the subject was.
  await commit(services, 'ssf.subjects_changed', stream, async (tx) => {
    if (identityId === null) return;
    if (change === 'remove') await tx.ssf.removeSubject(stream.streamId, identityId);
    else if (await tx.ssf.mayBeSubject(identityId, client.clientId, now))
      await tx.ssf.addSubject(stream.streamId, identityId, now);
  });
}

/** RFC 8936 §2.4: acknowledges what the receiver names, then answers the events still waiting. */
export async function pollStream(
  services: SsfStreamServices,
  client: StoredClient,
  streamId: string,
  body: Record<string, unknown>,
): Promise<{ sets: Record<string, string>; moreAvailable: boolean }> {
  const stream = await ownStream(services, client.clientId, streamId);
  if (stream.delivery !== 'poll') throw fail('not_found', 'no such poll stream');
  const ack = body.ack ?? [];
  if (!Array.isArray(ack) || ack.length > 1000 || ack.some((jti) => typeof jti !== 'string' || jti.length > 100))
    throw fail('invalid_request', 'ack must be a list of jti values');
  const setErrs = body.setErrs ?? {};
  if (typeof setErrs !== 'object' || setErrs === null || Array.isArray(setErrs))
    throw fail('invalid_request', 'setErrs must be an object of jti to error');
  const maxEvents = body.maxEvents ?? 100;
  if (typeof maxEvents !== 'number' || !Number.isInteger(maxEvents) || maxEvents < 0 || maxEvents > 1000)
    throw fail('invalid_request', 'maxEvents must be an integer from 0 to 1000');
  if (body.returnImmediately !== undefined && typeof body.returnImmediately !== 'boolean')
    throw fail('invalid_request', 'returnImmediately must be a boolean');
  // A SET the receiver reports an error for (§2.4 setErrs) was received: it is not offered again.
  const received = [...(ack as string[]), ...Object.keys(setErrs)];
  if (received.length) await services.storage.ssf.acknowledge(stream.streamId, received, services.now());
  if (maxEvents === 0)
    return { sets: {}, moreAvailable: (await services.storage.ssf.pollable(stream.streamId, 0)).more };
  const { events, more } = await services.storage.ssf.pollable(stream.streamId, maxEvents);
  const sets = await Promise.all(events.map(async (event) => [event.eventId, await signedSet(services, event)]));
  return { sets: Object.fromEntries(sets), moreAvailable: more };
}
