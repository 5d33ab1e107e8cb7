import type {
  AccountState,
  CredentialStore,
  DeviceStore,
  EmailStore,
  Identity,
  IdentityStore,
  KeyStore,
  LinkStore,
  RecoveryCodeStore,
  SessionStore,
  StoredEmail,
  TotpStore,
} from './types/accounts.js';
import type { AgentStore } from './types/agents.js';
import type { GatewayStore } from './types/gateways.js';
import type { LogoutStore } from './types/logout.js';
import type {
  ClientStore,
  CodeConsumption,
  OidcStore,
  ReceiptStore,
  RefreshConsumption,
  StoredAuthorizationCode,
  StoredGrant,
  StoredRefreshToken,
} from './types/oidc.js';
import type { ContactStore, OrgStore, RolloutStore, SamlStore, ScanStore, TeamStore } from './types/orgs.js';
import type { ApiStore } from './types/apis.js';
import type { TransparencyLogStore } from './types/transparency.js';
import type { WebhookStore } from './types/webhooks.js';
import type { SsfStore } from './types/ssf.js';
import type { ConnectionStore } from './types/connections.js';
import type { OperatorStore } from './types/operators.js';
import type { ScimStore } from './types/scim.js';
import type { ScimPushStore } from './types/scim-push.js';

/**
 * Storage is one small interface per resource. Methods are async so that a PostgreSQL backend
 * is an addition; the SQLite backend answers from prepared statements.
 */
export type * from './types/accounts.js';
export type * from './types/oidc.js';
export type * from './types/logout.js';
export type * from './types/gateways.js';
export type * from './types/agents.js';
export type * from './types/orgs.js';
export type * from './types/apis.js';
export type * from './types/transparency.js';
export type * from './types/webhooks.js';
export type * from './types/ssf.js';
export type * from './types/connections.js';
export type * from './types/operators.js';
export type * from './types/scim.js';
export type * from './types/scim-push.js';

export interface Stores {
  keys: KeyStore;
  identities: IdentityStore;
  credentials: CredentialStore;
  sessions: SessionStore;
  devices: DeviceStore;
  totp: TotpStore;
  recoveryCodes: RecoveryCodeStore;
  emails: EmailStore;
  links: LinkStore;
  receipts: ReceiptStore;
  clients: ClientStore;
  oidc: OidcStore;
  gateway: GatewayStore;
  agents: AgentStore;
  orgs: OrgStore;
  teams: TeamStore;
  scans: ScanStore;
  saml: SamlStore;
  rollout: RolloutStore;
  contacts: ContactStore;
  logouts: LogoutStore;
  apis: ApiStore;
  tlog: TransparencyLogStore;
  webhooks: WebhookStore;
  ssf: SsfStore;
  operators: OperatorStore;
  connections: ConnectionStore;
  scim: ScimStore;
  scimPush: ScimPushStore;
}

/** What a spend with writes did: `written` is what `write` returned, present only when this call spent the row. */
export interface SpentWith<Consumption, T> {
  consumption: Consumption;
  written?: T;
}

/**
 * The writes that go with a spend. They may only call store methods that write and return
 * nothing (inserts, `sessions.touch`, receipt appends): PostgreSQL collects their statements
 * before it knows whether the spend happens, and sends them with it. For the same reason,
 * whatever else they do (the ledger counting its receipt) happens there even when the spend
 * does not: check what can be checked before (a row read as spent already).
 */
export type WritesWithSpend<T> = (tx: Stores) => Promise<T>;

/**
 * What is stored about the account and the sign-in behind a code or grant, read with it: what
 * the grant checks before it issues, and what the ID token states.
 */
export interface GrantSubject {
  /** The account's state; null when it is gone. */
  state: AccountState | null;
  /** Whether the session that started it is live at the time asked. */
  sessionLive: boolean;
  identity: Identity | null;
  /** In `emails.listByIdentity` order. */
  emails: StoredEmail[];
}

export interface Storage extends Stores {
  /** Runs `work` in one transaction: everything it writes lands together or not at all. */
  transaction<T>(work: (tx: Stores) => Promise<T>): Promise<T>;
  /**
   * Spends the code (as `oidc.consumeCode` with `grantId`) and, only if this call spent it, lands
   * what `write` writes in the same atomic step. On PostgreSQL the spend and the writes are one
   * statement (one round trip, no BEGIN or COMMIT); on SQLite, one transaction.
   */
  redeemCode<T>(
    codeHash: string,
    at: number,
    grantId: string,
    write: WritesWithSpend<T>,
  ): Promise<SpentWith<CodeConsumption, T>>;
  /** The same for a refresh token (as `oidc.consumeRefreshToken`) and the writes of its rotation. */
  rotateRefreshToken<T>(
    tokenHash: string,
    at: number,
    write: WritesWithSpend<T>,
  ): Promise<SpentWith<RefreshConsumption, T>>;
  /** The code (as `oidc.findCode`) with its subject, in one read (one statement on PostgreSQL). */
  findCodeWithSubject(
    codeHash: string,
    now: number,
  ): Promise<{ code: StoredAuthorizationCode; subject: GrantSubject } | null>;
  /** The refresh token with its grant (as `oidc.findRefreshGrant`) and the grant's subject, in one read. */
  findRefreshWithSubject(
    tokenHash: string,
    now: number,
  ): Promise<{ token: StoredRefreshToken; grant: StoredGrant; subject: GrantSubject } | null>;
  /** Cheap liveness check for /readyz. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
