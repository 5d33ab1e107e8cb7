import { REASONS, type Reason } from './reasons.js';

export interface KeyplaneErrorOptions {
  status?: number;
  /** Extra fields for the envelope, such as the RFC 6749 `error` pair on OAuth endpoints. */
  fields?: Record<string, unknown>;
  headers?: Record<string, string>;
  cause?: unknown;
  /**
   * An authorization request's refusal that the client may hear at its redirect URI (RFC 6749
   * §4.1.2.1), once that URI matched the registration; never sent anywhere else.
   */
  toClient?: boolean;
}

/**
 * The one error a request can fail with. `reason` is stable and machine-readable; `message`
 * is for people and never carries internal detail. Mapped to the envelope in one place.
 */
export class KeyplaneError extends Error {
  readonly reason: Reason;
  readonly status: number;
  readonly fields: Record<string, unknown>;
  readonly headers: Record<string, string>;
  readonly toClient: boolean;

  constructor(reason: Reason, message?: string, options: KeyplaneErrorOptions = {}) {
    super(message ?? reason, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'KeyplaneError';
    this.reason = reason;
    this.status = options.status ?? REASONS[reason].status;
    this.fields = options.fields ?? {};
    this.headers = options.headers ?? {};
    this.toClient = options.toClient === true;
  }

  toEnvelope(): Record<string, unknown> {
    return { ok: false, reason: this.reason, message: this.message, ...this.fields };
  }
}

/** Builds a leaf error: `fail('not_found', 'no such receipt')`. */
export function fail(reason: Reason, message?: string, options?: KeyplaneErrorOptions): KeyplaneError {
  return new KeyplaneError(reason, message, options);
}

export function isKeyplaneError(error: unknown): error is KeyplaneError {
  return (
    error instanceof Error && error.name === 'KeyplaneError' && typeof (error as KeyplaneError).reason === 'string'
  );
}
