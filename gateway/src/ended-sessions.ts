import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import type { SharedState } from '#lib/runtime/shared-state/index.js';

/** Where shared state records a gateway session that ended before its cookie expires. */
export const endedSessionKey = (sid: string) => `session:ended:${sid}`;
/** Every replica hears of an ended session on this channel and refuses it at once. */
export const ENDED_SESSIONS_CHANNEL = 'gateway:session-ended';
/** Ended sessions kept in memory per replica; past it the expired go, and if none has, the set starts over (shared state keeps them). */
const LOCAL_LIMIT = 50_000;

/**
 * Gateway sessions that ended while a copy of their cookie may still be readable: replaced by a
 * new sign-in or step-up (session rotation, docs/gateway.md#session-rotation) or signed out.
 * The cookie is sealed and the gateway keeps no per-user state, so nothing inside a copied
 * cookie can say it was superseded; instead the ended `sid` is recorded in shared state until
 * that cookie would expire anyway, and announced to every replica.
 *
 * Every request checks the local set (a map look-up, no round trip). A replica learns of an
 * ending three ways: it ended the session itself, it heard the announcement, or, opening a
 * cookie it has not opened recently (its cache of opened cookies holds each at most 60 s), it
 * read the shared record. So a replica that missed the announcement (Redis pub/sub delivers at
 * most once) still refuses within that cache's 60 s.
 */
export class EndedSessions {
  readonly #ended = new Map<string, number>();
  #unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly state: SharedState,
    private readonly now: () => number,
    /** Forgets every opened cookie (the local set overflowed: openings are checked against shared state again). */
    private readonly forgetOpenings: () => void,
  ) {}

  /** Listens for endings announced by other replicas (and this one). */
  async start(): Promise<void> {
    this.#unsubscribe = await this.state.subscribe(ENDED_SESSIONS_CHANNEL, (message) => {
      const [sid, until] = message.split(' ');
      if (sid && until && /^\d+$/.test(until)) this.#remember(sid, Number(until));
    });
  }

  async stop(): Promise<void> {
    await this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /**
   * Ends `sid` until `until` (ms; when its cookie expires): recorded in shared state, remembered
   * here and announced to every replica.
   */
  async end(sid: string, until: number): Promise<void> {
    const ttl = until - this.now();
    if (ttl <= 0) return;
    this.#remember(sid, until);
    await this.state.set(endedSessionKey(sid), String(until), ttl);
    await this.state.publish(ENDED_SESSIONS_CHANNEL, `${sid} ${until}`);
  }

  /** Whether `sid` is known here to have ended. */
  has(sid: string): boolean {
    const until = this.#ended.get(sid);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.#ended.delete(sid);
    return false;
  }

  /**
   * Reads the shared record of `sid` into the local set; called when a cookie is opened afresh.
   * While shared state is away the local set answers alone: it holds every ending this replica
   * made or heard before the outage, and no replica can record a new one until it is back, so
   * refusing every session then (503) would protect nothing the local set does not.
   */
  async lookUp(sid: string): Promise<boolean> {
    if (this.has(sid)) return true;
    let until: string | null;
    try {
      until = await this.state.get(endedSessionKey(sid));
    } catch (error) {
      if (isDependencyUnavailable(error)) return false;
      throw error;
    }
    if (until === null || !/^\d+$/.test(until)) return false;
    this.#remember(sid, Number(until));
    return this.has(sid);
  }

  #remember(sid: string, until: number): void {
    if (until <= this.now()) return;
    if (this.#ended.size >= LOCAL_LIMIT && !this.#ended.has(sid)) this.#sweep();
    this.#ended.set(sid, Math.max(until, this.#ended.get(sid) ?? 0));
  }

  /** Drops what expired; still full, starts over and makes every cookie be opened (and looked up) again. */
  #sweep(): void {
    const now = this.now();
    for (const [sid, until] of this.#ended) if (until <= now) this.#ended.delete(sid);
    if (this.#ended.size < LOCAL_LIMIT) return;
    this.#ended.clear();
    this.forgetOpenings();
  }
}
