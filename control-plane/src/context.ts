import type { Registry } from 'prom-client';
import type { Locale } from '#lib/i18n/locales.js';
import type { ClientOrigins } from './clients/client-origins.js';
import type { AssuranceLevel } from '#lib/assurance/assurance.js';
import type { ControlPlaneConfig } from '#config/types.js';
import type { GuardedFetcher } from '#lib/fetch/guarded-fetch.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import type { EventBus } from './events/bus.js';
import type { KeyRing } from './keys/key-ring.js';
import type { Ledger } from './ledger/ledger.js';
import type { SecretsService } from './keys/secrets.js';
import type { Mailer } from './mail/mailer.js';
import type { Storage } from './storage/types.js';

/** What handlers may ask of the back-channel logout worker (logout/backchannel.ts implements it). */
export interface BackchannelDelivery {
  /** Delivers what is due now; resolves with how many logout tokens were sent. */
  deliverDue(): Promise<number>;
  /** Asks for a round soon (this replica just queued a logout token). */
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
  /** Delivers queued back-channel logout tokens (docs/oidc.md#101-back-channel-logout); `deliverDue()` runs a round now. */
  backchannelLogout: BackchannelDelivery;
  now: () => number;
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

/** Request-scoped state: one typed slot, made when first read (plugins/request-context.ts). */
export interface RequestContext {
  requestId: string;
  cspNonce: string;
  session?: SessionView;
  /** SHA-256 (hex) of the session cookie that found `session`: what a renewal of its token replaces. */
  sessionTokenHash?: string;
  /** The language of pages rendered for this request (plugins/locale.ts, docs/i18n.md). */
  locale?: Locale;
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
  }
}
