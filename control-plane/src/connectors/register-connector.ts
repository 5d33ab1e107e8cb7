import { connectorSnippet, planConnector } from '#lib/connectors/catalog.js';
import type { ConnectorTemplate, Snippet } from '#lib/connectors/connector.js';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import { describeChange, registerClient, type ClientChange, type Registrar } from '../clients/registration.js';

export interface ConnectorResult {
  template: ConnectorTemplate;
  change: ClientChange;
  snippet: Snippet;
}

/**
 * Registers the OIDC client a connector template derives from the tool's URL, through the same
 * metadata validation and registration as POST /register (so a connector can never register
 * what /register would refuse), then fills the tool's configuration with the new client's values.
 * The `client.registered` receipt names the connector.
 */
export async function registerConnector(
  services: ControlPlaneServices,
  name: string,
  body: unknown,
  registrar: Registrar,
): Promise<ConnectorResult> {
  const { template, inputs, registration } = planConnector(name, body);
  const metadata = validateClientMetadata(registration);
  const change = await registerClient(services, metadata, registrar, { connector: template.name });
  const snippet = connectorSnippet(template, {
    issuer: services.config.issuer,
    clientId: change.client.clientId,
    ...(change.issued.clientSecret !== undefined ? { clientSecret: change.issued.clientSecret } : {}),
    // The tool's own secret (cookie key, crypto passphrase): Keyplane never keeps it.
    toolSecret: randomToken(32),
    inputs,
  });
  return { template, change, snippet };
}

/** The JSON answer: the registration (secrets shown this once) and the snippet. */
export function describeConnectorResult(
  services: Pick<ControlPlaneServices, 'config'>,
  result: ConnectorResult,
): Record<string, unknown> {
  const { receipt, ...client } = describeChange(services, result.change);
  return {
    ok: true,
    connector: result.template.name,
    client,
    snippet: result.snippet,
    docs: result.template.docs,
    ...(receipt ? { receipt } : {}),
  };
}
