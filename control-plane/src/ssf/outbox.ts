import { randomId } from '#lib/crypto/random.js';
import type { Receipt } from '#lib/ledger/receipt.js';
import { backoffMs, type BackoffPolicy } from '#lib/outbox/backoff.js';
import {
  SSF_EVENTS,
  buildSecurityEvent,
  eventForReceipt,
  signSecurityEvent,
  type SecurityEventClaims,
  type SubjectIdentifier,
} from '#lib/ssf/security-event.js';
import type { ControlPlaneServices } from '../context.js';
import { outcomeOfFetchFailure, type DeliveryOutcome, type OutboxAdapter } from '../outbox/delivery-loop.js';
import type { SsfEvent, Storage, StoredSsfStream, Stores } from '../storage/interface.js';
import { fetchPolicyFor } from '../webhooks/outbox.js';

/**
 * Shared Signals as a subscriber of the ledger (docs/events.md#shared-signals-streams-from-a-receivers-view):
 * a receipt that stands for a CAEP or RISC event becomes one signed SET per enabled stream that
 * asked for the event and whose receiver may hear of the account, written in the receipt's
 * transaction; the delivery loop pushes them (RFC 8935), a poll stream's wait for the receiver
 * (RFC 8936).
 */

/** The sealing context of a push stream's `Authorization` value (keys/secrets.ts): bound to the stream. */
export const authorizationContext = (streamId: string) => `ssf-authorization:${streamId}`;

/** Waits between push attempts: 5 s, doubling, at most an hour apart; given up after a day. */
const BACKOFF: BackoffPolicy = { firstMs: 5000, factor: 2, maxMs: 3_600_000 };
const GIVE_UP_AFTER_MS = 24 * 3_600_000;
const DELIVERY = { timeoutMs: 10_000, maxBytes: 65_536 };
/** Finished events are kept this long; poll events never acknowledged, as long again. */
const KEEP_FINISHED_MS = 7 * 86_400_000;

export type SsfServices = Pick<ControlPlaneServices, 'storage' | 'keys' | 'config' | 'now'>;

/** RFC 9493 §3.2.4: the account as the `sub` its receiver knows (subjects are public: the identity id, docs/oidc.md). */
export function accountSubject(issuer: string, identityId: string): SubjectIdentifier {
  return { format: 'iss_sub', iss: issuer, sub: identityId };
}

/**
 * Queues one SET for `stream` in `tx`, its claims unsigned: the signature is made when it leaves
 * (`signedSet`), outside the receipt's transaction, where it would cost more than the receipt
 * itself (docs/performance.md#ledger-npm-run-benchledger), and with the key current then, which a
 * receiver can still find in the JWKS however long the SET waited.
 */
export async function queueSecurityEvent(
  services: Pick<SsfServices, 'config' | 'now'>,
  tx: Stores,
  stream: StoredSsfStream,
  event: { type: string; subject: SubjectIdentifier; payload: Record<string, unknown>; txn?: string },
): Promise<string> {
  const now = services.now();
  const jti = randomId('set');
  const claims = buildSecurityEvent({
    issuer: services.config.issuer,
    audience: stream.clientId,
    jti,
    now,
    subject: event.subject,
    type: event.type,
    payload: event.payload,
    ...(event.txn ? { txn: event.txn } : {}),
  });
  const row: SsfEvent = {
    eventId: jti,
    streamId: stream.streamId,
    delivery: stream.delivery,
    set: JSON.stringify(claims),
    createdAt: now,
    attempts: 0,
    nextAttemptAt: now,
    state: 'pending',
    lastError: null,
    finishedAt: null,
  };
  await tx.ssf.enqueue(row);
  return jti;
}

/** The SET of a queued event, signed now with the current key (a row queued signed is sent as it is). */
export function signedSet(services: Pick<SsfServices, 'keys'>, event: Pick<SsfEvent, 'set'>): Promise<string> {
  if (!event.set.startsWith('{')) return Promise.resolve(event.set);
  return signSecurityEvent(JSON.parse(event.set) as SecurityEventClaims, services.keys.current());
}

/**
 * The enabled streams, as the follower reads them: held in memory and refreshed every poll
 * interval and at once after a change here, so a receipt costs nothing while no stream exists
 * or none asked for its event.
 */
export class SsfTargets {
  private current: StoredSsfStream[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly storage: Pick<Storage, 'ssf'>) {}

  async refresh(): Promise<void> {
    this.current = await this.storage.ssf.listEnabled();
  }

  start(everyMs: number, onError: (error: unknown) => void): void {
    this.timer = setInterval(() => void this.refresh().catch(onError), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  wanting(type: string): boolean {
    return this.current.some((stream) => stream.eventsRequested.includes(type));
  }
}

/**
 * The ledger follower. It reads (the account's streams) inside the receipt's transaction: the
 * receipts it maps are never written with a spend (storage/interface.ts `WritesWithSpend`), whose
 * PostgreSQL transaction takes writes only; every other receipt returns before any read.
 */
export function ssfFollower(
  services: Pick<SsfServices, 'config' | 'now'>,
  targets: SsfTargets,
  queued: () => void,
): (tx: Stores, receipt: Receipt) => Promise<void> {
  return async (tx, receipt) => {
    const event = eventForReceipt(receipt as Receipt & { identityId?: unknown });
    const identityId = (receipt as Receipt & { identityId: string }).identityId;
    const deleted = receipt.kind === 'account.deleted';
    if (!event || !targets.wanting(event.type)) {
      if (deleted) await tx.ssf.forgetSubject(identityId);
      return;
    }
    const streams = await tx.ssf.subjectStreams(identityId, services.now());
    let any = false;
    let address: string | null | undefined;
    for (const { stream, email } of streams) {
      if (!stream.eventsRequested.includes(event.type)) continue;
      let payload = event.payload;
      if (event.needsEmail) {
        // RISC 1.0 §2.7: the new address, told only to a receiver holding scope `email` for the account.
        if (!email) continue;
        address ??= await verifiedAddress(tx, receipt);
        if (!address) continue;
        payload = { ...payload, 'new-value': address };
      }
      await queueSecurityEvent(services, tx, stream, {
        type: event.type,
        subject: accountSubject(services.config.issuer, identityId),
        payload,
      });
      any = true;
    }
    // A deleted account is a subject of no stream any more (after its account-purged event).
    if (deleted) await tx.ssf.forgetSubject(identityId);
    if (any) queued();
  };
}

async function verifiedAddress(tx: Stores, receipt: Receipt): Promise<string | null> {
  const emailId = (receipt as Receipt & { emailId?: unknown }).emailId;
  if (typeof emailId !== 'string') return null;
  const email = await tx.emails.get(emailId);
  return email && email.verifiedAt !== null ? email.email : null;
}

/** SSF 1.0 §8.1.4.2: the verification event for a stream, its subject the stream itself. */
export function queueVerification(
  services: Pick<SsfServices, 'config' | 'now'>,
  tx: Stores,
  stream: StoredSsfStream,
  state: string | undefined,
): Promise<string> {
  return queueSecurityEvent(services, tx, stream, {
    type: SSF_EVENTS.verification,
    subject: { format: 'opaque', id: stream.streamId },
    payload: state === undefined ? {} : { state },
  });
}

/**
 * RFC 8935 §2.3-2.4: 202 is success (any 2xx is taken); a 400 says the receiver refused this SET
 * for good; a 5xx, 408 or 429 may pass; anything else will not heal.
 */
function judge(status: number): DeliveryOutcome {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status >= 500 || status === 408 || status === 429) return { kind: 'retry', error: `status_${status}`, status };
  return { kind: 'abandon', error: `status_${status}`, status };
}

export type SsfDeliveryServices = Pick<
  ControlPlaneServices,
  'storage' | 'keys' | 'secrets' | 'fetcher' | 'config' | 'now'
>;

/** The Shared Signals push subscriber of the delivery loop. */
export function ssfPushAdapter(services: SsfDeliveryServices): OutboxAdapter<SsfEvent> {
  const { storage } = services;
  return {
    subscriber: 'ssf_push',
    claimDue: (now, holder, leaseUntil, limit) => storage.ssf.claimDue(now, holder, leaseUntil, limit),
    backlog: () => storage.ssf.backlog(),
    purge: (now) => storage.ssf.purge(now - KEEP_FINISHED_MS, now - KEEP_FINISHED_MS),
    async attempt(event) {
      const stream = await storage.ssf.getStream(event.streamId);
      if (!stream || stream.endpointUrl === null) return { kind: 'abandon', error: 'stream_deleted' };
      const client = await storage.clients.get(stream.clientId);
      if (!client) return { kind: 'abandon', error: 'client_deleted' };
      const authorization = stream.authorizationSealed
        ? services.secrets.open(authorizationContext(stream.streamId), stream.authorizationSealed).toString()
        : undefined;
      try {
        const answer = await services.fetcher.fetch(stream.endpointUrl, {
          ...DELIVERY,
          ...fetchPolicyFor(services.config, client.ownerId, stream.endpointUrl),
          method: 'POST',
          body: await signedSet(services, event),
          // RFC 8935 §2: the SET as the body, media type application/secevent+jwt.
          headers: { 'content-type': 'application/secevent+jwt' },
          ...(authorization ? { destinationAuthorization: authorization } : {}),
          accept: 'application/json',
          followRedirects: false,
        });
        return judge(answer.status);
      } catch (error) {
        return outcomeOfFetchFailure(error);
      }
    },
    async settle(event, outcome, holder) {
      const now = services.now();
      const attempts = event.attempts + 1;
      const giveUp = outcome.kind === 'retry' && now - event.createdAt >= GIVE_UP_AFTER_MS;
      const state =
        outcome.kind === 'delivered' ? 'delivered' : outcome.kind === 'abandon' || giveUp ? 'dead' : 'pending';
      const finished = await storage.ssf.finish(event.eventId, holder, {
        state,
        attempts,
        nextAttemptAt: state === 'pending' ? now + backoffMs(attempts, BACKOFF, Math.random()) : event.nextAttemptAt,
        lastError: outcome.kind === 'delivered' ? null : outcome.error,
        finishedAt: state === 'pending' ? null : now,
      });
      return finished ? state : 'lost';
    },
  };
}
