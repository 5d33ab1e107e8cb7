import { fail } from '../errors/keyplane-error.js';
import {
  checkConnectorInputs,
  type ConnectorRegistration,
  type ConnectorTemplate,
  type Snippet,
  type SnippetContext,
} from './connector.js';
import { apache } from './tools/apache.js';
import { argoCd } from './tools/argo-cd.js';
import { gitlab } from './tools/gitlab.js';
import { grafana } from './tools/grafana.js';
import { kubelogin } from './tools/kubelogin.js';
import { nextcloud } from './tools/nextcloud.js';
import { oauth2Proxy } from './tools/oauth2-proxy.js';
import { outline } from './tools/outline.js';

/** Every connector, in the order GET /connectors lists them. */
export const CONNECTORS: readonly ConnectorTemplate[] = [
  grafana,
  gitlab,
  argoCd,
  nextcloud,
  outline,
  kubelogin,
  apache,
  oauth2Proxy,
];

const BY_NAME = new Map(CONNECTORS.map((template) => [template.name, template]));

/** The template called `name`, or `unknown_connector` (404). */
export function findConnector(name: string): ConnectorTemplate {
  const template = BY_NAME.get(name);
  if (!template)
    throw fail('unknown_connector', `no connector is called ${name.slice(0, 60)}; GET /connectors lists them`);
  return template;
}

/** Step one: the checked inputs and the registration they make (still to be validated as client metadata). */
export function planConnector(
  name: string,
  body: unknown,
): { template: ConnectorTemplate; inputs: Record<string, string>; registration: ConnectorRegistration } {
  const template = findConnector(name);
  const inputs = checkConnectorInputs(template, body);
  return { template, inputs, registration: template.registration(inputs) };
}

/** Step two, once the client exists: the tool's configuration with the real values in it. */
export function connectorSnippet(template: ConnectorTemplate, context: SnippetContext): Snippet {
  return template.snippet(context);
}

/** What GET /connectors shows of a template (no functions, nothing secret). */
export function describeConnector(template: ConnectorTemplate, registration?: ConnectorRegistration) {
  return {
    name: template.name,
    title: template.title,
    inputs: template.inputs.map(({ note: _note, ...input }) => input),
    docs: template.docs,
    pkce: template.pkce,
    ...(registration ? { registration } : {}),
  };
}
