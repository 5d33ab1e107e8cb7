import type { Registry } from 'prom-client';
import type { Locale } from '#lib/i18n/locales.js';
import type { Reason } from '#lib/errors/reasons.js';
import type { KeyplaneError } from '#lib/errors/keyplane-error.js';
import type { ClientOrigins } from './clients/client-origins.js';
import type { AssuranceLevel } from '#lib/assurance/assurance.js';
import type { ControlPlaneConfig } from '#config/types.js';
import type { GuardedFetcher } from '#lib/fetch/guarded-fetch.js';
import type { AuthenticatorMetadata } from './passkeys/metadata.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import type { EventBus } from './events/bus.js';
import type { Actor } from './events/types.js';
import type { KeyRing } from './keys/key-ring.js';
import type { Ledger } from './ledger/ledger.js';
import type { SecretsService } from './keys/secrets.js';
import type { Mailer } from './mail/mailer.js';
import type { OperatorRole, Storage, StoredOrg } from './storage/interface.js';
import type { Tracing } from '#lib/telemetry/tracing.js';

/** What handlers may ask of a subscriber's delivery loop (outbox/delivery-loop.ts implements it). */
export interface OutboxDelivery {
  /** Delivers what is due now; resolves with how many attempts were made. */
  deliverDue(): Promise<number>;
  /** Asks for a round soon (this replica just queued something). */
  nudge(): void;
}

/** The services a control plane runs on, built once at start and handed to every plugin. */
export interface ControlPlaneServices {
  config: ControlPlaneConfig & { issuer: string };
  storage: Storage;
  state: SharedState;
  /** Whether PostgreSQL and Redis answer, from the calls made anyway: outages logged once, counted in `kp_dependency_errors_total`. */
  dependencies: DependencyMonitor;
  keys: KeyRing;
  metrics: Registry;
  events: EventBus;
  /** The receipt ledger: `sealNow()` seals pending receipts (tests, shutdown tools). */
  ledger: Ledger;
  /** Sealing and MAC keys under the master key (TOTP secrets, recovery-code hashes). */
  secrets: SecretsService;
  /** Outgoing mail: SMTP, or RFC 5322 files in <dataDir>/outbox/. */
  mailer: Mailer;
  /** The origins of registered redirect URIs, kept for the CORS checks (docs/oidc.md#91-browser-based-clients-cors). */
  clientOrigins: ClientOrigins;
  /** The one way to fetch a URL a user gave (https, public addresses, capped): docs/fetch.md. */
  fetcher: GuardedFetcher;
  /** The FIDO metadata BLOB attestation statements are verified against (docs/passkeys.md#metadata). */
  metadata: AuthenticatorMetadata;
  /** Delivers queued back-channel logout tokens (docs/oidc.md#101-back-channel-logout); `deliverDue()` runs a round now. */
  backchannelLogout: OutboxDelivery;
  /** Delivers queued webhook messages (docs/events.md#webhooks); `deliverDue()` runs a round now. */
  webhookDelivery: OutboxDelivery;
  /** The active webhooks as receipts are matched against them; `refresh()` after a change. */
  webhookTargets: { refresh(): Promise<void> };
  /** Pushes queued Shared Signals events (docs/events.md#shared-signals-streams-from-a-receivers-view); `deliverDue()` runs a round now. */
  ssfDelivery: OutboxDelivery;
  /** The enabled Shared Signals streams as receipts are matched against them; `refresh()` after a change. */
  ssfTargets: { refresh(): Promise<void> };
  /** Pushes queued outbound SCIM changes (docs/scim.md#outbound-scim); `deliverDue()` runs a round now. */
  scimPushDelivery: OutboxDelivery;
  /** The clients with a SCIM server as receipts are matched against them; `refresh()` after a change. */
  scimPushTargets: { refresh(): Promise<void> };
  /** OpenTelemetry traces of this control plane (docs/observability.md#traces); `TRACING_OFF` unless configured. */
  tracing: Tracing;
  now: () => number;
  /**
   * False in a worker under `--workers N`: the instance's background work and its one-per-start
   * announcements (the founder's setup link) belong to the primary (docs/scaling.md#workers).
   */
  background?: boolean;
  /** Tells the operator something they must act on (the CLI prints it as a plain line on stderr). */
  notify: (line: string) => void;
}

/** The signed-in session as handlers see it (filled by the session plugin when a valid cookie came). */
export interface SessionView {
  /** Opaque session identifier (never the cookie value). */
  id: string;
  identityId: string;
  deviceId: string;
  /** The assurance in force now (a lapsed step-up reads as `passkey`). */
  assurance: AssuranceLevel;
  amr: string[];
  /** When the user last authenticated (ms); raised by a step-up. */
  authTime: number;
}

/** A live console session (console/console-session.ts, docs/console.md#the-console-session). */
export interface ConsoleSessionView {
  /** SHA-256 (hex) of the cookie: what resume ids are bound to. */
  id: string;
  identityId: string;
  role: OperatorRole;
  openedAt: number;
}

/** Who an operator request comes from: the admin token, or a person with a console session. */
export interface OperatorCaller {
  actor: Actor;
  console?: ConsoleSessionView;
}

/** Request-scoped state: one typed slot, made when first read (plugins/request-context.ts). */
export interface RequestContext {
  requestId: string;
  cspNonce: string;
  session?: SessionView;
  /** SHA-256 (hex) of the session cookie that found `session`: what a renewal of its token replaces. */
  sessionTokenHash?: string;
  /** The language of pages rendered for this request (plugins/locale.ts, docs/i18n.md). */
  locale?: Locale;
  /** The console session the request carries (http/operator-access.ts), once looked up. */
  console?: ConsoleSessionView;
  consoleChecked?: boolean;
  /** Who an admin API request acts as: the admin token or a person's console session. */
  operator?: OperatorCaller;
  /** A SCIM request's org and the id of the token it came with (docs/scim.md#tokens). */
  scim?: { org: StoredOrg; tokenId: string };
}

declare module 'fastify' {
  interface FastifyInstance {
    kp: ControlPlaneServices;
  }
  interface FastifyRequest {
    kp: RequestContext;
  }
  interface FastifyContextConfig {
    /** Sent as Cache-Control; default `no-store`. */
    cache?: string;
    /**
     * An OAuth endpoint (token, revocation, introspection): every failure also carries the RFC 6749
     * §5.2 `error`/`error_description` pair beside the envelope, added by the error handler.
     */
    oauthErrors?: boolean;
    /**
     * Members a protocol adds to every failure's envelope (FedCM's `{"error": {"code", "error"}}`),
     * given the failure's reason; added by the error handler, the one place failures are answered.
     */
    errorMembers?: (reason: Reason, failure: KeyplaneError) => Record<string, unknown>;
    /** The media type of the route's failures (SCIM's `application/scim+json`); JSON when unset. */
    errorType?: string;
    /**
     * The route's pages post forms back to us with the session: `Referrer-Policy: same-origin` (header
     * and the page's meta tag) instead of `no-referrer`, under which Chromium sends `Origin: null` on
     * a form POST navigation and the session's Origin check refuses it. Other origins still get
     * nothing. Set on the route, or on a whole area with `sameOriginReferrerArea`.
     */
    sameOriginReferrer?: boolean;
  }
}
