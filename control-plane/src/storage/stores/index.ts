import type { Sql } from '../sql.js';
import type { Stores } from '../interface.js';
import { agentStore } from './agent-store.js';
import { apiStore } from './api-store.js';
import { contactStore } from './contact-store.js';
import { credentialStore } from './credential-store.js';
import { deviceStore } from './device-store.js';
import { emailStore } from './email-store.js';
import { gatewayStore } from './gateway-store.js';
import { identityStore } from './identity-store.js';
import { keyStore } from './key-store.js';
import { linkStore } from './link-store.js';
import { logoutStore } from './logout-store.js';
import { oidcStore } from './oidc-store.js';
import { operatorStore } from './operator-store.js';
import { orgStore, scanStore } from './org-store.js';
import { receiptStore } from './receipt-store.js';
import { recoveryCodeStore } from './recovery-code-store.js';
import { rolloutStore } from './rollout-store.js';
import { samlStore } from './saml-store.js';
import { scimStore } from './scim-store.js';
import { sessionStore } from './session-store.js';
import { teamStore } from './team-store.js';
import { totpStore } from './totp-store.js';
import { transparencyLogStore } from './transparency-log-store.js';
import { webhookStore } from './webhook-store.js';
import { ssfStore } from './ssf-store.js';
import { connectionStore } from './connection-store.js';
import { scimPushStore } from './scim-push-store.js';

/** The stores whose construction is the same on both backends: the client store takes SQLite's read cache. */
export type SharedStores = Omit<Stores, 'clients'>;

export function sharedStores(sql: Sql): SharedStores {
  return {
    keys: keyStore(sql),
    identities: identityStore(sql),
    credentials: credentialStore(sql),
    sessions: sessionStore(sql),
    devices: deviceStore(sql),
    totp: totpStore(sql),
    recoveryCodes: recoveryCodeStore(sql),
    emails: emailStore(sql),
    links: linkStore(sql),
    receipts: receiptStore(sql),
    gateway: gatewayStore(sql),
    agents: agentStore(sql),
    orgs: orgStore(sql),
    teams: teamStore(sql),
    rollout: rolloutStore(sql),
    logouts: logoutStore(sql),
    contacts: contactStore(sql),
    scans: scanStore(sql),
    saml: samlStore(sql),
    oidc: oidcStore(sql),
    apis: apiStore(sql),
    tlog: transparencyLogStore(sql),
    webhooks: webhookStore(sql),
    ssf: ssfStore(sql),
    operators: operatorStore(sql),
    connections: connectionStore(sql),
    scim: scimStore(sql),
    scimPush: scimPushStore(sql),
  };
}
