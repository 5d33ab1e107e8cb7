import { fail, type KeyplaneError } from './keyplane-error.js';

/**
 * What a dependency outage looks like, decided in one place. The drivers (pg, ioredis, undici,
 * jose's remote key set) each report a server that cannot be reached in their own way; the
 * boundaries that call them (storage, shared state, the gateway's control-plane client) ask
 * `classifyOutage` and throw a `DependencyUnavailableError`, which the error handlers map to
 * 503 `unavailable` with `Retry-After` (docs/errors.md#dependency-outages). Anything else
 * (a unique violation, a Lua error, a 400 from the control plane) is not an outage and passes
 * through unchanged.
 */

/** The parts a request may wait on: `metric label` and the words a message names them with. */
export const DEPENDENCIES = {
  postgres: 'the database (PostgreSQL)',
  redis: 'shared state (Redis)',
  control_plane: 'the control plane',
} as const;
export type Dependency = keyof typeof DEPENDENCIES;

/**
 * How the dependency failed: `refused` (nothing listens), `reset` (a connection broke),
 * `timeout` (no answer within the budget), `unreachable` (no route, no name, or the driver gave
 * up reconnecting), `failover` (the server answers but cannot serve writes yet: a replica, a
 * starting or shutting-down server, a cluster slot without a master), `unreplicated` (a
 * one-time write was not confirmed by the replicas it must reach).
 */
export type OutageKind = 'refused' | 'reset' | 'timeout' | 'unreachable' | 'failover' | 'unreplicated';

/** Seconds a client is told to wait before retrying (RFC 9110 §10.2.3 `Retry-After`). */
export const RETRY_AFTER_SECONDS = 5;

/** Node.js socket and resolver errors (`error.code`). */
const SOCKET_CODES: Record<string, OutageKind> = {
  ECONNREFUSED: 'refused',
  ECONNRESET: 'reset',
  ECONNABORTED: 'reset',
  EPIPE: 'reset',
  ERR_SOCKET_CLOSED: 'reset',
  ERR_STREAM_DESTROYED: 'reset',
  ETIMEDOUT: 'timeout',
  EHOSTUNREACH: 'unreachable',
  EHOSTDOWN: 'unreachable',
  ENETUNREACH: 'unreachable',
  ENETDOWN: 'unreachable',
  EAI_AGAIN: 'unreachable',
  ENOTFOUND: 'unreachable',
  // undici (the gateway's calls to the control plane)
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  UND_ERR_SOCKET: 'reset',
  UND_ERR_CLOSED: 'reset',
  // jose's createRemoteJWKSet
  ERR_JWKS_TIMEOUT: 'timeout',
};

/**
 * PostgreSQL SQLSTATEs that mean the server cannot serve now, not that the statement is wrong
 * (PostgreSQL manual, Appendix A): class 08 is a connection exception; 57P01-57P03 a server
 * shutting down, crashed or still starting (recovery); 25006 a write sent to a read-only
 * server, which is what a standby or a demoted primary answers during a switchover; 53300 no
 * connection slot left.
 */
const SQLSTATES: Record<string, OutageKind> = {
  '57P01': 'failover',
  '57P02': 'reset',
  '57P03': 'failover',
  '25006': 'failover',
  '53300': 'unreachable',
};

/**
 * Errors the drivers raise without a code, by their exact message. pg and ioredis set no
 * `code` on these (pg: client.js and pg-pool; ioredis: Redis.js, Command.js, utils), so the
 * message is the only handle; each is a fixed string in the driver's source.
 */
const DRIVER_MESSAGES: Record<string, OutageKind> = {
  // pg
  'Connection terminated unexpectedly': 'reset',
  'Connection terminated': 'reset',
  'Connection terminated due to connection timeout': 'timeout',
  'timeout exceeded when trying to connect': 'timeout',
  'Query read timeout': 'timeout',
  'Client has encountered a connection error and is not queryable': 'reset',
  'Client was closed and is not queryable': 'reset',
  // ioredis
  'Connection is closed.': 'reset',
  'Connection is aborted': 'reset',
  'Command aborted due to connection close': 'reset',
  'Connection is discarded because a new connection is made': 'reset',
  'Node is disconnected': 'reset',
  'Cluster is disconnected.': 'reset',
  'connect ETIMEDOUT': 'timeout',
  'Command timed out': 'timeout',
  "Stream isn't writeable and enableOfflineQueue options is false": 'unreachable',
  "Cluster isn't ready and enableOfflineQueue options is false": 'unreachable',
  'Failed to refresh slots cache.': 'unreachable',
  'None of startup nodes is available': 'unreachable',
};

/** ioredis messages that go on with details of their own, by their fixed beginning. */
const DRIVER_PREFIXES: Array<[string, OutageKind]> = [
  ['All sentinels are unreachable', 'unreachable'],
  ['Too many Cluster redirections', 'failover'],
  ['Ready check failed', 'failover'],
];

/** ioredis error names (`error.name`) that mean it gave up on the server. */
const DRIVER_NAMES: Record<string, OutageKind> = {
  MaxRetriesPerRequestError: 'unreachable',
  ClusterAllFailedError: 'unreachable',
};

/**
 * Redis error replies whose first word says the server cannot serve the command now: a
 * replica (READONLY, after a failover demoted it), a server loading its data (LOADING), a
 * replica whose master is down (MASTERDOWN), a cluster without a master for the slot
 * (CLUSTERDOWN, TRYAGAIN) or whose slot moved on and was not followed in time (MOVED, ASK), a
 * master refusing writes for lack of replicas (NOREPLICAS, `min-replicas-to-write`).
 */
const REDIS_REPLIES: Record<string, OutageKind> = {
  READONLY: 'failover',
  MOVED: 'failover',
  ASK: 'failover',
  LOADING: 'failover',
  MASTERDOWN: 'failover',
  CLUSTERDOWN: 'failover',
  TRYAGAIN: 'failover',
  NOREPLICAS: 'failover',
};

/** What classifying an error found: the kind of outage and a short detail for the log (never for a response). */
export interface Outage {
  kind: OutageKind;
  /** The code, SQLSTATE or driver message that decided it. */
  detail: string;
  /**
   * True when the driver knew the connection was broken before it sent anything (pg's "not
   * queryable"): the statement never reached the server, so sending it again is safe.
   */
  notSent: boolean;
}

const MAX_DEPTH = 4;

/**
 * Whether `error` means a dependency could not be reached or cannot serve now, and how. Looks
 * through `cause` (fetch wraps socket errors in "fetch failed") and `AggregateError.errors`
 * (Node.js tries every address of a name). Null for every other error.
 */
export function classifyOutage(error: unknown, depth = 0): Outage | null {
  if (error === null || typeof error !== 'object' || depth > MAX_DEPTH) return null;
  if (isDependencyUnavailable(error)) return { kind: error.kind, detail: error.detail, notSent: false };
  const { code, name, message } = error as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string') {
    const kind = SOCKET_CODES[code] ?? SQLSTATES[code] ?? (code.startsWith('08') && code.length === 5 ? 'reset' : null);
    if (kind) return { kind, detail: code, notSent: false };
  }
  if (typeof name === 'string' && DRIVER_NAMES[name]) return { kind: DRIVER_NAMES[name], detail: name, notSent: false };
  if (typeof message === 'string') {
    const kind = DRIVER_MESSAGES[message];
    if (kind) return { kind, detail: message, notSent: message.endsWith('is not queryable') };
    if (name === 'ReplyError') {
      const word = message.split(' ', 1)[0]!;
      if (REDIS_REPLIES[word]) return { kind: REDIS_REPLIES[word], detail: word, notSent: false };
    }
    for (const [prefix, kind] of DRIVER_PREFIXES)
      if (message.startsWith(prefix)) return { kind, detail: prefix, notSent: false };
  }
  const nested = (error as { errors?: unknown }).errors;
  if (Array.isArray(nested))
    for (const inner of nested) {
      const found = classifyOutage(inner, depth + 1);
      if (found) return found;
    }
  return classifyOutage((error as { cause?: unknown }).cause, depth + 1);
}

/**
 * A dependency could not serve a request's call. Thrown by the boundary that made the call,
 * which knows which dependency it was; mapped to 503 `unavailable` by `unavailableFailure`.
 */
export class DependencyUnavailableError extends Error {
  override name = 'DependencyUnavailableError';

  constructor(
    readonly dependency: Dependency,
    readonly kind: OutageKind,
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(`${DEPENDENCIES[dependency]} is unavailable (${kind}: ${detail})`, options);
  }
}

export function isDependencyUnavailable(error: unknown): error is DependencyUnavailableError {
  return (
    error instanceof Error &&
    error.name === 'DependencyUnavailableError' &&
    typeof (error as DependencyUnavailableError).dependency === 'string'
  );
}

/** The outage as a `DependencyUnavailableError` of `dependency`, or null when `error` is no outage. */
export function toDependencyError(dependency: Dependency, error: unknown): DependencyUnavailableError | null {
  if (isDependencyUnavailable(error)) return error;
  const outage = classifyOutage(error);
  return outage ? new DependencyUnavailableError(dependency, outage.kind, outage.detail, { cause: error }) : null;
}

/**
 * The answer to a request a dependency outage stopped: 503 `unavailable` naming the part, with
 * `Retry-After` (RFC 9110 §15.6.4). The message names the part only, never the driver's error.
 */
export function unavailableFailure(error: Pick<DependencyUnavailableError, 'dependency'>): KeyplaneError {
  return fail('unavailable', `${DEPENDENCIES[error.dependency]} is unavailable; retry shortly`, {
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    cause: error,
  });
}
