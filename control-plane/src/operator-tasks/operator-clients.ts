/**
 * The clients an operator's own process registers in-process, such as `keyplane up`'s demo gateway
 * and its in-place example page: ordinary OIDC clients, remembered by id in the data dir.
 */
export { ensureOperatorClient, type OperatorClient, type OperatorClientOptions } from '../clients/operator-client.js';
export type { ControlPlaneServices } from '../context.js';
